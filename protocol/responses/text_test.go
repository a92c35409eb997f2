package responses

import (
	"bytes"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// TestTextReadsAsDecode: an item's text is what Decode's reading of it
// says (wire.AppendText), for every item of the corpus, after any text
// already in dst.
func TestTextReadsAsDecode(t *testing.T) {
	for _, raw := range countCorpus {
		for _, dst := range []string{"", "before"} {
			if got, want := (Codec{}).Text([]byte(dst), []byte(raw)), textThroughDecode([]byte(dst), []byte(raw)); !bytes.Equal(got, want) {
				t.Errorf("Text(%q, %s) = %q, want %q", dst, raw, got, want)
			}
		}
	}
}

// FuzzText checks the same of any bytes.
func FuzzText(f *testing.F) {
	for _, raw := range countCorpus {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := (Codec{}).Text(nil, raw), textThroughDecode(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("Text(%q) = %q, want %q", raw, got, want)
		}
	})
}

// textThroughDecode is Text as Decode's parts have it.
func textThroughDecode(dst, raw []byte) []byte {
	m, err := Codec{}.Decode(raw)
	if err != nil {
		return dst
	}
	return wire.AppendText(dst, m)
}
