package prototest

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Decoder is a codec's Decode, or the reading it stands in for.
type Decoder func(raw []byte) (wire.Message, error)

// SameDecode fails unless decode reads raw exactly as tree does: the same
// message, and the same error or none. It checks a codec's fast reading
// of a common shape against the full reading it skips.
func SameDecode(t testing.TB, raw []byte, decode, tree Decoder) {
	t.Helper()
	got, gerr := decode(raw)
	want, werr := tree(raw)
	if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("Decode(%q) = %+v, %v; want %+v, %v", raw, got, gerr, want, werr)
	}
}

// SameDecodes is SameDecode of every document of corpus.
func SameDecodes(t *testing.T, corpus []string, decode, tree Decoder) {
	t.Helper()
	for _, raw := range corpus {
		SameDecode(t, []byte(raw), decode, tree)
	}
}

// FuzzSameDecode fuzzes SameDecode from corpus.
func FuzzSameDecode(f *testing.F, corpus []string, decode, tree Decoder) {
	for _, raw := range corpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { SameDecode(t, raw, decode, tree) })
}

// TextThroughDecode is c's Text as its Decode's parts have it
// (wire.AppendText after dst), dst alone for a message Decode refuses.
func TextThroughDecode(c wire.Codec, dst, raw []byte) []byte {
	m, err := c.Decode(raw)
	if err != nil {
		return dst
	}
	return wire.AppendText(dst, m)
}

// SameText fails unless c's Text of raw after dst is TextThroughDecode's,
// for dst empty, holding text, and holding text with room past it (which
// a reading that gives up part way may have written).
func SameText(t testing.TB, c wire.Codec, raw []byte) {
	t.Helper()
	for _, dst := range [][]byte{nil, []byte("before"), append(make([]byte, 0, 64), "before"...)} {
		want := TextThroughDecode(c, append([]byte(nil), dst...), raw)
		if got := c.Text(dst, raw); string(got) != string(want) {
			t.Fatalf("Text(%q, %q) = %q, want %q", dst, raw, got, want)
		}
	}
}

// FuzzSameText fuzzes SameText from corpus.
func FuzzSameText(f *testing.F, c wire.Codec, corpus []string) {
	for _, raw := range corpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { SameText(t, c, raw) })
}

// BenchDecodes runs a codec's one-pass Decode (pass) and the reading it
// stands in for (tree) on every one of items, each of which must decode
// into a message of one part, reporting allocations.
func BenchDecodes(b *testing.B, items [][]byte, pass, tree Decoder) {
	for _, c := range []struct {
		name   string
		decode Decoder
	}{{"pass", pass}, {"tree", tree}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, raw := range items {
					if m, err := c.decode(raw); err != nil || len(m.Parts) != 1 {
						b.Fatal(m, err)
					}
				}
			}
		})
	}
}
