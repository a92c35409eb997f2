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

// TestChunkedMatchesWhole compares chunked counts with one encoder call over
// the whole text: equal for prose, whose chunks end on exact piece
// boundaries, and within 1% for code.
func TestChunkedMatchesWhole(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		exact bool
	}{
		{"prose 50KB", prose(50 << 10), true},
		{"go source", sourceText(t), false},
		{"cjk", strings.Repeat("お誕生日おめでとう。今日はいい天気ですね。\n", 300), false},
	}
	var c Counter
	for _, enc := range []Encoding{O200k, CL100k} {
		for _, tt := range tests {
			t.Run(string(enc)+"/"+tt.name, func(t *testing.T) {
				chunks := 0
				c := Counter{onChunk: func(string) { chunks++ }}
				got := c.Text(enc, tt.text)
				want := len(encoderFor(enc).EncodeOrdinary(tt.text))
				t.Logf("%d bytes, %d chunks: chunked %d, whole %d", len(tt.text), chunks, got, want)
				if chunks < 2 {
					t.Fatalf("chunks: got %d, want the text split", chunks)
				}
				if tt.exact && got != want {
					t.Errorf("chunked count: got %d, want %d", got, want)
				}
				if diff := got - want; diff*100 > want || -diff*100 > want {
					t.Errorf("chunked count: got %d, want within 1%% of %d", got, want)
				}
			})
		}
	}
	_ = c
}

// pathological returns inputs on which unchunked tiktoken-go is slow:
// 100 KB without any piece boundary, or with very many pieces.
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
		{"random bytes", string(raw), n / 4, n},
		{"random runes", runes.String(), n / 8, n},
		{"base64", base64.StdEncoding.EncodeToString(raw[:n*3/4]), n / 4, n},
	}
}

// TestTextPathologicalBounded proves the work on pathological inputs is
// bounded structurally: every chunk is at most maxChunk bytes and holds no
// run longer than maxRun bytes without a piece boundary, so no piece the
// quadratic byte-pair merge sees is longer than maxRun. Chunks concatenate
// back to the input and never split a valid rune.
func TestTextPathologicalBounded(t *testing.T) {
	for _, tt := range pathological() {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			largest, longestRun := 0, 0
			c := Counter{onChunk: func(s string) {
				b.WriteString(s)
				largest = max(largest, len(s))
				longestRun = max(longestRun, longestUnbroken(s))
				if utf8.ValidString(tt.text) && !utf8.ValidString(s) {
					t.Errorf("chunk %q... splits a rune", s[:min(len(s), 16)])
				}
			}}
			got := c.Text(O200k, tt.text)
			if got < tt.min || got > tt.max {
				t.Errorf("tokens: got %d, want %d..%d", got, tt.min, tt.max)
			}
			if largest > maxChunk {
				t.Errorf("largest chunk: got %d bytes, want <= %d", largest, maxChunk)
			}
			if longestRun > maxRun {
				t.Errorf("longest run without a boundary: got %d bytes, want <= %d", longestRun, maxRun)
			}
			if b.String() != tt.text {
				t.Errorf("chunks: got %d bytes back, want the %d input bytes", b.Len(), len(tt.text))
			}
		})
	}
}

// longestUnbroken returns the longest stretch of s without a piece boundary.
func longestUnbroken(s string) int {
	longest, run := 0, 0
	for i := 1; i < len(s); i++ {
		if isBoundary(s, i) {
			longest, run = max(longest, i-run), i
		}
	}
	return max(longest, len(s)-run)
}

func TestTextCap(t *testing.T) {
	text := prose(maxText + 40_000 + 3)
	var seen int
	c := Counter{onChunk: func(s string) { seen += len(s) }}
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
	text := prose(8 << 10)
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

func TestCutPoint(t *testing.T) {
	long := strings.Repeat("x", maxRun+50)
	tests := []struct {
		name string
		s    string
		want int
	}{
		{"short", "hello", 5},
		{"at maxRun", strings.Repeat("y", maxRun), maxRun},
		{"run cut", long, maxRun},
		{"ends before a long run", "ab " + long, 2},
		{"rune not split", strings.Repeat("é", maxRun), maxRun},
		{"newline boundary", strings.Repeat("z", maxRun-10) + "\n" + long, maxRun - 9},
		{"whole when short runs", strings.Repeat("ab ", 100), 300},
		{"chunk limit", strings.Repeat("word ", 2000), maxChunk - 2},
		{"digit boundaries", strings.Repeat("x", maxRun-1) + "7" + long, maxRun},
		{"no digit boundary after space", strings.Repeat(" ", maxRun) + "7", maxRun},
		{"punctuation boundary", strings.Repeat("x", maxRun-1) + "+" + long, maxRun - 1},
		{"no boundary before apostrophe", strings.Repeat("x", maxRun-1) + "'" + long, maxRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cutPoint(tt.s); got != tt.want {
				t.Errorf("cutPoint: got %d, want %d", got, tt.want)
			}
		})
	}
}

func FuzzText(f *testing.F) {
	f.Add(prose(600))
	f.Add(strings.Repeat(" ", 300) + "x")
	f.Add(strings.Repeat("é", 200))
	f.Add("\n\n\nabc  \t def\n")
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		c := Counter{onChunk: func(chunk string) {
			if chunk == "" || len(chunk) > maxChunk {
				t.Fatalf("chunk of %d bytes", len(chunk))
			}
			b.WriteString(chunk)
		}}
		if n := c.Text(O200k, s); n < 0 || (s != "" && n == 0) {
			t.Fatalf("Text: got %d tokens for %d bytes", n, len(s))
		}
		if b.String() != s {
			t.Fatalf("chunks: got %q, want %q", b.String(), s)
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
	for _, size := range []int{1 << 10, 64 << 10} {
		text := prose(size)
		for _, enc := range []Encoding{O200k, CL100k} {
			b.Run(fmt.Sprintf("%s/prose-%dKB", enc, size>>10), func(b *testing.B) {
				var c Counter
				c.Text(enc, text) // build the encoder outside the timing
				b.SetBytes(int64(len(text)))
				b.ReportAllocs()
				for b.Loop() {
					c.Text(enc, text)
				}
			})
		}
	}
}

// BenchmarkTextPathological reports the time of 100 KB inputs that are
// quadratic for unchunked tiktoken-go.
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

// FuzzBoundaryExact checks isBoundary's rules against the encoders: counting
// s split at every boundary it reports gives exactly the whole-text count.
func FuzzBoundaryExact(f *testing.F) {
	f.Add(prose(300))
	f.Add("x  7 a+b it's 12345abc ==QmFz\n\nfoo.\nbar  \t\n baz 'quoted' +1")
	f.Add("func f() {\n\tif x == 1 {\n\t\treturn \"é\"\n\t}\n}\n")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			return
		}
		for _, enc := range []Encoding{O200k, CL100k} {
			tk := encoderFor(enc)
			split, start := 0, 0
			for i := 1; i < len(s); i++ {
				if isBoundary(s, i) {
					split += len(tk.EncodeOrdinary(s[start:i]))
					start = i
				}
			}
			split += len(tk.EncodeOrdinary(s[start:]))
			if whole := len(tk.EncodeOrdinary(s)); split != whole {
				t.Fatalf("%s %q: got %d split at boundaries, want %d", enc, s, split, whole)
			}
		}
	})
}
