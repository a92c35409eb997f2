package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// TestDecodeStringItems: an item of string members decodes in one pass
// exactly as gjson's reading of it does (decodeTree), error and all.
func TestDecodeStringItems(t *testing.T) {
	prototest.SameDecodes(t, append(countCorpus,
		`{"type":"message","role":"assistant","content":"plain","id":"msg_1","status":"completed"}`,
		`{"type":"function_call_output","call_id":"c","output":"o","call_id":"second"}`,
		`{"type":"","role":"user","content":"x"}`,
		`{"role":"user","content":"no type","type":"message"}`,
		`{"type":"item_reference","id":"msg_1"}`,
		`{"type":"custom_tool_call","call_id":"c","input":"x"}`,
	), Codec{}.Decode, decodeTree)
}

// textPartsRead are message items decodeParts reads; textPartsLeft
// are items it leaves to decodeTree (for Text: textTree).
var (
	textPartsRead = []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`,
		`{"role":"assistant","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"It is sunny."}],"id":"msg_1","status":"completed","type":"message"}`,
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b\n\u00e9\ud83d\ude00"}]}`,
		`{"type":"message","role":"system","content":"plain \"quoted\""}`,
		`{"type":"message","role":"user","content":[]}`,
		`{"type":"message","role":"user","content":""}`,
		` { "type" : "message" , "role" : "user" , "content" : [ { "text" : "x" , "type" : "input_text" } ] } `,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[{"type":"url_citation","url":"https://e.x","start_index":0,"end_index":1}]}]}`,
	}
	textPartsLeft = []string{
		`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"https://e.x/a.png"}]}`,
		`{"type":"message","role":"user","content":[{"type":"refusal","refusal":"no"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":5}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","type":"output_text","text":"a"}]}`,
		`{"type":"message","role":"user","content":["hi"]}`,
		`{"type":"message","role":"user","content":{"type":"input_text","text":"hi"}}`,
		`{"type":"message","role":"user","content":null}`,
		`{"type":"message","role":"user"}`,
		`{"type":"message","role":"user","content":"a","content":[]}`,
		`{"type":"message","role":"user","role":"system","content":"a"}`,
		`{"type":"message","type":"reasoning","role":"user","content":"a"}`,
		`{"type":"message","role":"tool","content":"a"}`,
		`{"type":"message","role":5,"content":"a"}`,
		`{"type":"message","content":"a"}`,
		`{"type":"mess\u0061ge","role":"user","content":"a"}`,
		`{"type":"message","r\u006fle":"user","content":"a"}`,
		`{"type":"function_call","role":"user","content":"a"}`,
		`{"type":null,"role":"user","content":"a"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}],}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]} x`,
		`{"type":"message","role":"user","content":"bad ` + "\xff" + ` utf-8"}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"a","deep":` + strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40) + `}]}`,
	}
)

// TestDecodeTextParts: a message item of text parts decodes in one pass
// exactly as decodeTree reads it, and every shape the pass leaves to
// decodeTree decodes as decodeTree does too.
func TestDecodeTextParts(t *testing.T) {
	read, left := textPartsRead, textPartsLeft
	for _, raw := range read {
		if _, ok := decodeParts([]byte(raw)); !ok {
			t.Errorf("decodeParts(%s) not ok, want it read", raw)
		}
	}
	for _, raw := range left {
		if _, ok := decodeParts([]byte(raw)); ok {
			t.Errorf("decodeParts(%s) ok, want it left to decodeTree", raw)
		}
	}
	prototest.SameDecodes(t, append(read, left...), Codec{}.Decode, decodeTree)
	prototest.SameDecodes(t, read, func(raw []byte) (wire.Message, error) {
		m, _ := decodeParts(raw)
		return m, nil
	}, decodeTree)
}

// FuzzDecode checks the same of any bytes.
func FuzzDecode(f *testing.F) { prototest.FuzzSameDecode(f, countCorpus, Codec{}.Decode, decodeTree) }
