package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// BenchmarkDecodeText is what translating a stored message item to
// another protocol costs before it is encoded.
func BenchmarkDecodeText(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat(`The trend holds, and the figures say so. `, 14) + `"}`)
	prototest.BenchDecode(b, Codec{}, raw, 1)
}

// BenchmarkDecodeParts is the decoding of the two message items of a
// turn as SDKs and the API write them (content as text parts), which
// the commit's hash and an answer's parse do: Decode's one pass, and
// decodeTree's reads it stands in for.
func BenchmarkDecodeParts(b *testing.B) {
	text := strings.Repeat(`The trend holds, and the figures say so. `, 14)
	items := [][]byte{
		[]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}`),
		[]byte(`{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text + `"}],"role":"assistant"}`),
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (wire.Message, error)
	}{{"pass", Codec{}.Decode}, {"tree", decodeTree}} {
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
