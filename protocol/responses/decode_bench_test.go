package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
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
	_, items := turnItems()
	prototest.BenchDecodes(b, items, Codec{}.Decode, decodeTree)
}

// turnItems are the two message items of a turn as SDKs and the API
// write them (content as text parts), and the text each holds.
func turnItems() (text string, items [][]byte) {
	text = strings.Repeat(`The trend holds, and the figures say so. `, 14)
	return text, [][]byte{
		[]byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}`),
		[]byte(`{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + text + `"}],"role":"assistant"}`),
	}
}
