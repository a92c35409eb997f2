package tokens

import (
	"encoding/base64"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// prose returns about n bytes of deterministic English-like prose: sentences
// of common words with punctuation, numbers and paragraph breaks.
func prose(n int) string {
	words := strings.Fields(`the a of and to in is was that it for on with as by
		proxy conversation memory history token budget message assistant user
		request response store summary turn model upstream client server cache
		quickly carefully however although because remembers forgets counts
		Recall OpenAI Badger tiktoken don't it's we'll they're`)
	r := rand.New(rand.NewSource(42))
	var b strings.Builder
	for b.Len() < n {
		k := 5 + r.Intn(15)
		for i := 0; i < k; i++ {
			w := words[r.Intn(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			switch r.Intn(12) {
			case 0:
				b.WriteByte(',')
			case 1:
				b.WriteString(" 2024")
			}
		}
		b.WriteString([]string{".", "?", "!", "."}[r.Intn(4)])
		if r.Intn(6) == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// sourceText returns this package's Go sources: code with tabs, newlines and
// punctuation runs.
func sourceText(t testing.TB) string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob sources: %v (%d files)", err, len(files))
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// pathological returns inputs that are one huge piece or very many pieces,
// on which an unbounded byte-pair merge would be slow.
func pathological() []struct {
	name     string
	text     string
	min, max int // sane o200k token range
} {
	const n = 100_000
	r := rand.New(rand.NewSource(7))
	raw := make([]byte, n)
	r.Read(raw)
	var runes strings.Builder
	for runes.Len() < n {
		runes.WriteRune(rune(0x20 + r.Intn(0x3000)))
	}
	return []struct {
		name     string
		text     string
		min, max int
	}{
		{"spaces", strings.Repeat(" ", n), n / 256, n / 32},
		{"letter", strings.Repeat("a", n), n / 32, n / 2},
		{"newlines", strings.Repeat("\n", n), n / 256, n / 2},
		{"tabs and spaces", strings.Repeat("\t ", n/2), n / 256, n},
		{"punctuation", strings.Repeat("!", n), n / 64, n / 2},
		{"digits", strings.Repeat("7", n), n / 4, n / 2},
		{"random bytes", string(raw), n / 4, 2 * n},
		{"random runes", runes.String(), n / 8, n},
		{"base64", base64.StdEncoding.EncodeToString(raw[:n*3/4]), n / 4, n},
		{"cjk", strings.Repeat("漢", n/3), n / 300, n / 3},
	}
}

// TestTextPathologicalBounded proves the work on pathological inputs is
// bounded structurally: no piece handed to the merge is longer than
// maxPiece, never split a valid rune, and the pieces concatenate back to
// the text (as tiktoken-go sees it: invalid bytes become U+FFFD).
func TestTextPathologicalBounded(t *testing.T) {
	for _, tt := range pathological() {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			longest := 0
			c := Counter{onPiece: func(p string) {
				b.WriteString(p)
				longest = max(longest, len(p))
				if !utf8.ValidString(p) {
					t.Errorf("piece %q... is not valid UTF-8", p[:min(len(p), 16)])
				}
			}}
			got := c.Text(O200k, tt.text)
			if got < tt.min || got > tt.max {
				t.Errorf("tokens: got %d, want %d..%d", got, tt.min, tt.max)
			}
			if longest > maxPiece {
				t.Errorf("longest piece: got %d bytes, want <= %d", longest, maxPiece)
			}
			if want := string([]rune(tt.text)); b.String() != want {
				t.Errorf("pieces: got %d bytes back, want the %d bytes of the text", b.Len(), len(want))
			}
		})
	}
}

func TestTextCap(t *testing.T) {
	text := prose(maxText + 40_000 + 3)
	var seen int
	c := Counter{onPiece: func(s string) { seen += len(s) }}
	got := c.Text(CL100k, text)
	if seen != maxText {
		t.Errorf("bytes tokenised: got %d, want %d", seen, maxText)
	}
	var plain Counter
	if want := plain.Text(CL100k, text[:maxText]) + (len(text)-maxText+3)/4; got != want {
		t.Errorf("capped count: got %d, want %d", got, want)
	}
}

func TestTextEmptyAndBytes(t *testing.T) {
	var c Counter
	if got := c.Text(O200k, ""); got != 0 {
		t.Errorf("Text(\"\"): got %d, want 0", got)
	}
	if got := c.Bytes(O200k, nil); got != 0 {
		t.Errorf("Bytes(nil): got %d, want 0", got)
	}
	p := prose(10_000)
	if got, want := c.Bytes(CL100k, []byte(p)), c.Text(CL100k, p); got != want {
		t.Errorf("Bytes: got %d, want Text's %d", got, want)
	}
}

func TestCounterConcurrent(t *testing.T) {
	var c Counter
	text := prose(8<<10) + strings.Repeat("x", 3*maxPiece) // some merges use the pool
	want := [2]int{c.Text(O200k, text), c.Text(CL100k, text)}
	var wg sync.WaitGroup
	got := make([][2]int, 8)
	for i := range got {
		wg.Go(func() {
			got[i] = [2]int{c.Text(O200k, text), c.Text(CL100k, text)}
		})
	}
	wg.Wait()
	for i, g := range got {
		if g != want {
			t.Errorf("goroutine %d: got %v, want %v", i, g, want)
		}
	}
}

// TestTextAllocs proves counting valid UTF-8 allocates nothing, for pieces
// that are tokens, pieces merged on the stack and pieces merged with
// pooled scratch space.
func TestTextAllocs(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		pooled bool
	}{
		{"prose", prose(4 << 10), false},
		{"code", sourceText(t)[:8<<10], false},
		{"cjk", strings.Repeat("お誕生日おめでとう。今日はいい天気ですね。\n", 20), false},
		{"long pieces", strings.Repeat("z", 3*maxPiece+5) + " " + strings.Repeat("ab", 200), true},
	}
	var c Counter
	for _, enc := range []Encoding{O200k, CL100k} {
		for _, tt := range tests {
			t.Run(string(enc)+"/"+tt.name, func(t *testing.T) {
				if tt.pooled && raceEnabled {
					t.Skip("sync.Pool drops items at random under -race")
				}
				c.Text(enc, tt.text)
				if got := testing.AllocsPerRun(20, func() { c.Text(enc, tt.text) }); got != 0 {
					t.Errorf("allocs per Text: got %v, want 0", got)
				}
			})
		}
	}
}

func FuzzText(f *testing.F) {
	f.Add(prose(600))
	f.Add(strings.Repeat(" ", 300) + "x")
	f.Add(strings.Repeat("é", 200))
	f.Add("\n\n\nabc  \t def\n")
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		c := Counter{onPiece: func(p string) {
			if p == "" || len(p) > maxPiece {
				t.Fatalf("piece of %d bytes", len(p))
			}
			b.WriteString(p)
		}}
		if n := c.Text(O200k, s); n < 0 || (s != "" && n == 0) {
			t.Fatalf("Text: got %d tokens for %d bytes", n, len(s))
		}
		if want := string([]rune(s)); len(s) <= maxText && b.String() != want {
			t.Fatalf("pieces: got %q, want %q", b.String(), want)
		}
	})
}

func FuzzMessage(f *testing.F) {
	for _, m := range cookbookMessages {
		f.Add([]byte(m))
	}
	f.Add([]byte(`{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`))
	f.Add([]byte(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var c Counter
		if n := c.Message(CL100k, raw); n < perMessage {
			t.Fatalf("Message: got %d, want >= %d", n, perMessage)
		}
		if n := c.Tools(CL100k, raw); n < 0 {
			t.Fatalf("Tools: got %d, want >= 0", n)
		}
	})
}

func BenchmarkText(b *testing.B) {
	texts := []struct {
		name string
		text string
	}{
		{"prose-1KB", prose(1 << 10)},
		{"prose-64KB", prose(64 << 10)},
		{"cjk-1KB", strings.Repeat("お誕生日おめでとう。今日はいい天気ですね。\n", 16)},
	}
	for _, tt := range texts {
		for _, enc := range []Encoding{O200k, CL100k} {
			b.Run(string(enc)+"/"+tt.name, func(b *testing.B) {
				var c Counter
				c.Text(enc, tt.text) // load the vocabulary outside the timing
				b.SetBytes(int64(len(tt.text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Text(enc, tt.text)
				}
			})
		}
	}
}

// BenchmarkTextCold counts a message of forty words, as a user's turn
// is, after evicting the processor's caches, as a request's other work
// does in the proxy: the vocabulary's lookups miss the caches there, not
// in BenchmarkText's loop.
func BenchmarkTextCold(b *testing.B) {
	text := prose(256)
	evict := make([]byte, 4<<20)
	for _, enc := range []Encoding{O200k, CL100k} {
		b.Run(string(enc)+"/prose-256B", func(b *testing.B) {
			var c Counter
			c.Text(enc, text)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				b.StopTimer()
				for i := 0; i < len(evict); i += 64 {
					evict[i]++
				}
				b.StartTimer()
				c.Text(enc, text)
			}
		})
	}
}

// BenchmarkTiktoken is the reference: tiktoken-go on the same 1 KB prose.
func BenchmarkTiktoken(b *testing.B) {
	text := prose(1 << 10)
	for _, enc := range []Encoding{O200k, CL100k} {
		b.Run(fmt.Sprintf("%s/prose-1KB", enc), func(b *testing.B) {
			tk := reference(enc)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				tk.EncodeOrdinary(text)
			}
		})
	}
}

// BenchmarkTextPathological reports the time of 100 KB inputs that are one
// huge piece or very many pieces.
func BenchmarkTextPathological(b *testing.B) {
	for _, tt := range pathological() {
		b.Run(tt.name, func(b *testing.B) {
			var c Counter
			c.Text(O200k, "warm up")
			b.SetBytes(int64(len(tt.text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Text(O200k, tt.text)
			}
		})
	}
}
