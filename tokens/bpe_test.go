package tokens

import (
	"runtime"
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
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	bytes := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("both vocabularies: %d objects, %.1f MiB", objects, float64(bytes)/(1<<20))
	if objects > 100 || bytes > 10<<20 {
		t.Errorf("both vocabularies hold %d objects and %d bytes, want at most 100 and 10 MiB", objects, bytes)
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

// A vocabulary file with a line that is not base64 and a rank, or whose
// rank is not a number, is an error, not a table missing tokens.
func TestReadRankTableRefusesABadLine(t *testing.T) {
	for _, file := range []string{"IQ== 0\n!!! 1\n", "IQ== 0\nIg== x\n"} {
		if _, _, err := readRankTable([]byte(file)); err == nil {
			t.Errorf("%q: no error", file)
		}
	}
	tab, maxLen, err := readRankTable([]byte("IQ== 0\nIiM= 7\n\n"))
	if err != nil || tab.rank("!") != 0 || tab.rank(`"#`) != 7 || tab.rank("#") != -1 || maxLen != 2 {
		t.Errorf("got err %v, ranks %d %d %d, longest %d; want 0, 7, -1 and 2", err, tab.rank("!"), tab.rank(`"#`), tab.rank("#"), maxLen)
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
