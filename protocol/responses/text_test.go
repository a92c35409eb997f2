package responses

import (
	"bytes"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// TestTextReadsAsDecode: an item's text is what Decode's reading of it
// says (wire.AppendText), and what textTree reads, for every item of the
// corpus, after any text already in dst.
func TestTextReadsAsDecode(t *testing.T) {
	corpus := append(append(append([]string(nil), countCorpus...), textPartsRead...), textPartsLeft...)
	for _, raw := range corpus {
		prototest.SameText(t, Codec{}, []byte(raw))
		for _, dst := range []string{"", "before"} {
			if got, want := (Codec{}).Text([]byte(dst), []byte(raw)), (Codec{}).textTree([]byte(dst), []byte(raw)); !bytes.Equal(got, want) {
				t.Errorf("Text(%q, %s) = %q, textTree reads %q", dst, raw, got, want)
			}
		}
	}
}

// TestTextOfAnItemLeftAfterSomeText: an item the one pass reads part of
// before leaving it (a text part, then an image) has its text read
// whole by textTree, with nothing of the pass's left in dst, whatever
// room dst has.
func TestTextOfAnItemLeftAfterSomeText(t *testing.T) {
	raw := []byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"first"},{"type":"input_image","image_url":"https://e.x/a.png"},{"type":"input_text","text":"second"}]}`)
	for _, dst := range [][]byte{nil, []byte("before"), append(make([]byte, 0, 64), "before"...)} {
		want := string(dst) + "\nfirst\nsecond"
		if len(dst) == 0 {
			want = "first\nsecond"
		}
		if got := (Codec{}).Text(dst, raw); string(got) != want {
			t.Errorf("Text(%q) = %q, want %q", dst, got, want)
		}
	}
}

// BenchmarkText is the text a search fold reads of the two message items
// of a turn as SDKs and the API write them: Text's one pass against
// textTree's reads.
func BenchmarkText(b *testing.B) {
	text, items := turnItems()
	for _, c := range []struct {
		name string
		text func(dst, raw []byte) []byte
	}{{"pass", Codec{}.Text}, {"tree", Codec{}.textTree}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]byte, 0, 2*len(text))
			for b.Loop() {
				for _, raw := range items {
					if got := c.text(dst, raw); len(got) != len(text) {
						b.Fatal(string(got))
					}
				}
			}
		})
	}
}

// FuzzText checks the same of any bytes.
func FuzzText(f *testing.F) { prototest.FuzzSameText(f, Codec{}, countCorpus) }
