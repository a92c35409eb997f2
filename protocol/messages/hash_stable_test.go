package messages

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// stableMessages are messages whose own canonical form (not chat's) makes
// their hash: stored messages keep the hash they were written with.
var stableMessages = []prototest.HashCase{
	{Name: "thinking and a text with null citations", Raw: `{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm \u00e9","signature":"sig"},{"type":"text","text":"a","citations":null}]}`, Want: 0xb8c760826fffa09e},
	{Name: "a tool_use whose input repeats a key", Raw: `{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"f","input":{"b":[1,null,""],"a":{"x":1.5},"a":{"x":2}}}]}`, Want: 0x511561c20d777573},
	{Name: "an erring tool_result of text and an image", Raw: `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}}],"is_error":true}]}`, Want: 0x243715c2bf780eee},
	{Name: "a document with a cache hint", Raw: `{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t","cache_control":{"type":"ephemeral"}}]}`, Want: 0x31262fac4d1c6364},
	{Name: "not an object", Raw: `["not", "an", "object"]`, Want: 0x966405912fbce112},
}

// TestHashStable pins the hashes of messages that have no chat rendering:
// stored messages keep the hash they were written with, so their canonical
// form must never change.
func TestHashStable(t *testing.T) {
	prototest.HashesPinned(t, Codec{}.Hash, stableMessages)
}

func BenchmarkHash(b *testing.B) {
	prototest.BenchHash(b, Codec{}.Hash, []prototest.Sample{
		{Name: "thinking", Raw: stableMessages[0].Raw},
		{Name: "tool-use", Raw: stableMessages[1].Raw},
		{Name: "result", Raw: stableMessages[2].Raw},
		{Name: "easy-text", Raw: `{"role":"user","content":"Question 1: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`},
		{Name: "long-thinking", Raw: `{"role":"assistant","content":[{"type":"thinking","thinking":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 100) + `","signature":"s"}]}`},
	})
}
