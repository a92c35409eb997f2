package responses

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// stableItems are items whose own canonical form (not chat's) makes their
// hash: stored items keep the hash they were written with.
var stableItems = []prototest.HashCase{
	{Name: "a reasoning item", Raw: `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Thinking \u00e9"}],"encrypted_content":"gAAA"}`, Want: 0x1018059da607448e},
	{Name: "a function_call_output of text and an image", Raw: `{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"https://a/1.png","detail":null}]}`, Want: 0x4b1302ccf0155f08},
	{Name: "an assistant message with an annotation and a refusal", Raw: `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[{"type":"url_citation","url":"https://x","start_index":0,"end_index":1}]},{"type":"refusal","refusal":"no"}]}`, Want: 0x4b8f4a86ea66a0e},
	{Name: "a local_shell_call_output with a repeated extra member", Raw: `{"type":"local_shell_call_output","id":"ls_1","output":"ok","extra":{"k":[1,null,"",{},[]],"k":true}}`, Want: 0xebb1d6f3f4fc1d02},
	{Name: "a web_search_call", Raw: `{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q","sources":[]}}`, Want: 0xe9a1934ff90b0eac},
	{Name: "not an object", Raw: `["not", "an", "object"]`, Want: 0x966405912fbce112},
}

// TestHashStable pins the hashes of items that have no chat rendering:
// stored items keep the hash they were written with, so their canonical
// form must never change.
func TestHashStable(t *testing.T) {
	prototest.HashesPinned(t, Codec{}.Hash, stableItems)
}

func BenchmarkHash(b *testing.B) {
	prototest.BenchHash(b, Codec{}.Hash, []prototest.Sample{
		{Name: "reasoning", Raw: stableItems[0].Raw},
		{Name: "output-parts", Raw: stableItems[1].Raw},
		{Name: "message-parts", Raw: stableItems[2].Raw},
		{Name: "easy-text", Raw: `{"role":"user","content":"Question 1: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`},
		{Name: "long-summary", Raw: `{"type":"reasoning","summary":[{"type":"summary_text","text":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 100) + `"}]}`},
	})
}
