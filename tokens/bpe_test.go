package tokens

import (
	"encoding/base64"
	"runtime"
	"strconv"
	"testing"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// The rank table answers exactly what the vocabulary file says: every
// token's rank, and -1 for byte strings that are not tokens (a token with
// a byte added or taken away, where it is not a token itself).
func TestRankTableMatchesTheVocabulary(t *testing.T) {
	for _, enc := range []Encoding{O200k, CL100k} {
		ranks := loadRanks(t, enc)
		v := vocabFor(enc)
		misses := 0
		for tok, r := range ranks {
			if got := v.rank(tok); got != r {
				t.Fatalf("%s: rank(%q) = %d, want %d", enc, tok, got, r)
			}
			for _, other := range []string{tok + "\x00", tok + "zq", tok[1:]} {
				if _, ok := ranks[other]; !ok && other != "" {
					misses++
					if got := v.rank(other); got != -1 {
						t.Fatalf("%s: rank(%q) = %d, want -1 (not a token)", enc, other, got)
					}
				}
			}
		}
		if misses < len(ranks) {
			t.Errorf("%s: only %d non-tokens tried", enc, misses)
		}
	}
}

// A token sits near the slot its hash picks: at the table's load of about
// 0.38, linear probing with a hash that spreads the keys displaces a token
// by 0.31 slots on average. A hash that ignored some of a short token's
// bytes (a multiply whose low bits were kept) displaced them by 0.58.
func TestRankTableProbesAreShort(t *testing.T) {
	for _, enc := range []Encoding{O200k, CL100k} {
		tab := vocabFor(enc).ranks
		mask := uint64(len(tab.slots) - 1)
		total := 0
		for i, sl := range tab.slots {
			if sl.word == 0 {
				continue
			}
			var tok []byte
			if sl.word&0xf == longToken {
				k := sl.word >> 4
				tok = tab.bytes[tab.offs[k]:tab.offs[k+1]]
			} else {
				for j := range int(sl.word) {
					tok = append(tok, byte(sl.key>>(8*j)))
				}
			}
			b := string(tok)
			total += int((uint64(i) - tab.hash(b, keyOf(b))&mask) & mask)
		}
		if mean := float64(total) / float64(tab.tokens); mean > 0.4 {
			t.Errorf("%s: tokens sit %.2f slots past their hash's on average, want at most 0.4", enc, mean)
		}
	}
}

// The vocabularies live in a handful of pointer-free arrays, not a map of
// 300,000 strings that every garbage collection would mark.
func TestVocabularyMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's allocations blur the count")
	}
	var before, after runtime.MemStats
	oFile, cFile := vocabularyFile(t, O200k), vocabularyFile(t, CL100k)
	runtime.GC()
	runtime.ReadMemStats(&before)
	o, _, err := readRankTable(oFile)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := readRankTable(cFile)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(o)
	runtime.KeepAlive(c)
	runtime.KeepAlive(oFile) // read before the first count: not the tables'
	runtime.KeepAlive(cFile)
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	bytes := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("both vocabularies: %d objects, %.1f MiB", objects, float64(bytes)/(1<<20))
	if objects > 100 || bytes > 16<<20 {
		t.Errorf("both vocabularies hold %d objects and %d bytes, want at most 100 and 16 MiB", objects, bytes)
	}
}

func loadRanks(t *testing.T, enc Encoding) map[string]int {
	t.Helper()
	ranks, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("https://openaipublic.blob.core.windows.net/encodings/" + string(enc) + ".tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	return ranks
}

func vocabularyFile(tb testing.TB, enc Encoding) []byte {
	tb.Helper()
	b, err := assets.Assets.ReadFile(string(enc) + ".tiktoken")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// A vocabulary file with a line that is not base64 and a rank, whose
// rank is not a number, or whose token is empty, is an error, not a table
// missing tokens.
func TestReadRankTableRefusesABadLine(t *testing.T) {
	for _, file := range []string{"IQ== 0\n!!! 1\n", "IQ== 0\nIg== x\n", "IQ== 0\n 1\n"} {
		if _, _, err := readRankTable([]byte(file)); err == nil {
			t.Errorf("%q: no error", file)
		}
	}
	tab, maxLen, err := readRankTable([]byte("IQ== 0\nIiM= 7\n\n"))
	if err != nil || tab.rank("!") != 0 || tab.rank(`"#`) != 7 || tab.rank("#") != -1 || maxLen != 2 {
		t.Errorf("got err %v, ranks %d %d %d, longest %d; want 0, 7, -1 and 2", err, tab.rank("!"), tab.rank(`"#`), tab.rank("#"), maxLen)
	}
	// Tokens of eight bytes and more, and one that is another's first
	// eight bytes followed by zeros: a slot's key and length tell them
	// apart.
	long := "abcdefgh\x00\x00"
	file := ""
	for i, tok := range []string{"abcdefgh", "abcdefghi", long, "abcdefg"} {
		file += base64.StdEncoding.EncodeToString([]byte(tok)) + " " + strconv.Itoa(10+i) + "\n"
	}
	tab, maxLen, err = readRankTable([]byte(file))
	if err != nil || maxLen != len(long) {
		t.Fatalf("got err %v, longest %d", err, maxLen)
	}
	for tok, want := range map[string]int{"abcdefgh": 10, "abcdefghi": 11, long: 12, "abcdefg": 13, "abcdefgh\x00": -1, "abcdefg\x00": -1, "abcdefghj": -1, "abcdefgh\x00\x00\x00": -1} {
		if got := tab.rank(tok); got != want {
			t.Errorf("rank(%q) = %d, want %d", tok, got, want)
		}
	}
}

// BenchmarkVocabularyLoad times what the first count of each encoding
// costs (the process's start warms both): the embedded file read and its
// rank table built.
func BenchmarkVocabularyLoad(b *testing.B) {
	for _, enc := range []Encoding{O200k, CL100k} {
		b.Run(string(enc), func(b *testing.B) {
			for b.Loop() {
				file := vocabularyFile(b, enc)
				if _, _, err := readRankTable(file); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
