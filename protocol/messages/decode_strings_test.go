package messages

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// stringMessages are messages of string members, and some that are not.
var stringMessages = []string{
	`{"role":"user","content":"Hello, how are you today?"}`,
	`{"role":"assistant","content":""}`,
	`{"role":"system","content":"You are terse."}`,
	`{"role":"user"}`,
	`{"role":"robot","content":"hi"}`,
	`{"content":"hi"}`,
	`{"role":"user","content":"first","content":"second","role":"assistant"}`,
	`{"role":"user","content":"caf\u00e9 \"quoted\" \\ tab\t \ud83d\ude00 \ud800"}`,
	`{"role":"user","content":[{"type":"text","text":"blocks"}]}`,
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}`,
	`{"role":"user","content":null}`,
	`{"role":"user","content":42}`,
	`{"role":"user","content":"unterminated`,
	`[1,2]`,
	``,
	"{\"role\":\"user\",\"content\":\"bad \xff utf-8\"}",
}

// TestDecodeStringMessages: a message of string members decodes in one
// pass exactly as gjson's reading of it does (decodeTree), error and all.
func TestDecodeStringMessages(t *testing.T) {
	prototest.SameDecodes(t, stringMessages, Codec{}.Decode, decodeTree)
}

// FuzzDecode checks the same of any bytes.
func FuzzDecode(f *testing.F) {
	prototest.FuzzSameDecode(f, stringMessages, Codec{}.Decode, decodeTree)
}
