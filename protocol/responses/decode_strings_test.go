package responses

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
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

// FuzzDecode checks the same of any bytes.
func FuzzDecode(f *testing.F) { prototest.FuzzSameDecode(f, countCorpus, Codec{}.Decode, decodeTree) }
