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
