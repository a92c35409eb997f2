package messages

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// textBlocksRead are messages decodeBlocks reads; textBlocksLeft are
// messages it leaves to decodeTree.
var (
	textBlocksRead = []string{
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"It is sunny.","citations":null}]}`,
		`{"content":[{"text":"a","type":"text"},{"type":"text","text":"b\n\u00e9\ud83d\ude00"}],"role":"assistant"}`,
		`{"role":"user","content":[{"type":"text","text":"cached","cache_control":{"type":"ephemeral"}}]}`,
		`{"role":"system","content":[{"type":"text","text":""}]}`,
		`{"role":"user","content":[]}`,
		` { "role" : "user" , "content" : [ { "type" : "text" , "text" : "x" } ] } `,
		`{"role":"user","content":[{"type":"text","text":"a"}],"id":5}`,
	}
	textBlocksLeft = []string{
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"t","content":"ok"}]}`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"f","input":{}}]}`,
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"}]}`,
		`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://e.x/a.png"}}]}`,
		`{"role":"user","content":[{"type":"text"}]}`,
		`{"role":"user","content":[{"type":"text","text":5}]}`,
		`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`,
		`{"role":"user","content":[{"type":"text","type":"image","text":"a"}]}`,
		`{"role":"user","content":["hi"]}`,
		`{"role":"user","content":{"type":"text","text":"hi"}}`,
		`{"role":"user","content":null}`,
		`{"role":"user","content":"plain","id":5}`,
		`{"role":"user"}`,
		`{"content":[{"type":"text","text":"a"}]}`,
		`{"role":"robot","content":[{"type":"text","text":"a"}]}`,
		`{"role":5,"content":[{"type":"text","text":"a"}]}`,
		`{"role":"us\u0065r","content":[{"type":"text","text":"a"}]}`,
		`{"r\u006fle":"user","content":[{"type":"text","text":"a"}]}`,
		`{"role":"user","role":"assistant","content":[{"type":"text","text":"a"}]}`,
		`{"role":"user","content":[{"type":"text","text":"a"}],"content":[]}`,
		`{"role":"user","content":[{"type":"te\u0078t","text":"a"}]}`,
		`{"role":"user","content":[{"type":"text","text":"a"}],}`,
		`{"role":"user","content":[{"type":"text","text":"a"}]} x`,
		`{"role":"user","content":[{"type":"text","text":"bad ` + "\xff" + ` utf-8"}]}`,
		`{"role":"user","content":[{"type":"text","text":"a","deep":` + strings.Repeat(`[`, chat.MaxDepth) + strings.Repeat(`]`, chat.MaxDepth) + `}]}`,
		`[{"role":"user","content":[]}]`,
		``,
	}
)

// TestDecodeTextBlocks: a message of text blocks decodes in one pass
// exactly as decodeTree reads it, and every shape the pass leaves to
// decodeTree decodes as decodeTree does too.
func TestDecodeTextBlocks(t *testing.T) {
	for _, raw := range textBlocksRead {
		if _, ok := decodeBlocks([]byte(raw)); !ok {
			t.Errorf("decodeBlocks(%s) not ok, want it read", raw)
		}
	}
	for _, raw := range textBlocksLeft {
		if _, ok := decodeBlocks([]byte(raw)); ok {
			t.Errorf("decodeBlocks(%s) ok, want it left to decodeTree", raw)
		}
	}
	prototest.SameDecodes(t, append(append([]string(nil), textBlocksRead...), textBlocksLeft...), Codec{}.Decode, decodeTree)
	prototest.SameDecodes(t, textBlocksRead, func(raw []byte) (wire.Message, error) {
		m, _ := decodeBlocks(raw)
		return m, nil
	}, decodeTree)
}

// FuzzDecodeBlocks checks Decode against decodeTree from messages of
// text blocks.
func FuzzDecodeBlocks(f *testing.F) {
	prototest.FuzzSameDecode(f, append(append([]string(nil), textBlocksRead...), textBlocksLeft...), Codec{}.Decode, decodeTree)
}

// TestTextReadsAsDecode: a message's text is what Decode's reading of it
// says (wire.AppendText), after any text already in dst, whatever room
// dst has: a message the pass reads part of before leaving it has
// nothing of the pass's left.
func TestTextReadsAsDecode(t *testing.T) {
	for _, raw := range append(append(append([]string(nil), stringMessages...), textBlocksRead...), textBlocksLeft...) {
		prototest.SameText(t, Codec{}, []byte(raw))
	}
}

// FuzzText checks the same of any bytes.
func FuzzText(f *testing.F) {
	prototest.FuzzSameText(f, Codec{}, append(append([]string(nil), textBlocksRead...), textBlocksLeft...))
}

// BenchmarkDecodeBlocks is the decoding of a turn's two messages as the
// API returns the model's and SDKs send a user's with a cache hint
// (content as text blocks), which the commit's hash, an answer's parse
// and the search fold's text do: Decode's one pass, and decodeTree's
// reads it stands in for.
func BenchmarkDecodeBlocks(b *testing.B) {
	text := strings.Repeat(`The trend holds, and the figures say so. `, 14)
	prototest.BenchDecodes(b, [][]byte{
		[]byte(`{"role":"user","content":[{"type":"text","text":"` + text + `","cache_control":{"type":"ephemeral"}}]}`),
		[]byte(`{"role":"assistant","content":[{"type":"text","text":"` + text + `"}]}`),
	}, Codec{}.Decode, decodeTree)
}
