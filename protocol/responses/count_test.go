package responses

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/counttest"
	"github.com/recallproxy/recall/wire"
)

// TestTokensCountsAsChat: an item Tokens counts counts exactly as its
// chat rendition does, in both encodings, so the budget decides as
// before; the common items are counted from their own bytes.
func TestTokensCountsAsChat(t *testing.T) {
	var own []string
	for _, i := range []int{0, 1, 3, 4, 5, 20, 21, 23, 25} { // text messages, calls, outputs
		own = append(own, countCorpus[i])
	}
	counttest.CountsAsChat(t, Codec{}, wire.Responses, countCorpus, own)
}

// FuzzTokens checks the same of any bytes: whatever Tokens counts, it
// counts as the chat rendition does, and it leaves invalid UTF-8 alone.
func FuzzTokens(f *testing.F) {
	counttest.FuzzCountsAsChat(f, Codec{}, wire.Responses, countCorpus)
}

// TestCountReadsTheItem: plan.Count counts a message item with Tokens,
// from the item's bytes, not through a chat rendition it writes.
func TestCountReadsTheItem(t *testing.T) {
	counttest.CountsWithoutAllocating(t, wire.Responses, []string{countCorpus[0], countCorpus[5]})
}

// countCorpus holds items of every shape Tokens reads and of the shapes
// it leaves to the chat rendition.
var countCorpus = []string{
	`{"role":"user","content":"Hello, how are you today?"}`,
	`{"type":"message","role":"user","content":""}`,
	`{"role":"developer","content":"Be terse."}`,
	`{"type":"message","role":"system","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"one","annotations":[]},{"type":"output_text","text":" two"},{"type":"output_text","text":""}]}`,
	`{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Sure: here is a short answer."}],"role":"assistant"}`,
	`{"type":"message","role":"user","content":[]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text"}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":7}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"caf\u00e9 \"quoted\" \\ tab\t \ud83d\ude00 \ud800 <b>&amp;</b>"}]}`,
	`{"role":"user","content":"日本語のテキストです。\n\n  spaces   and\r\nlines"}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"https://example.com/cat.png"}]}`,
	`{"type":"message","role":"user","content":[{"type":"input_file","file_id":"file_1"}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"No."}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"refusal","refusal":"b"},{"type":"refusal","refusal":"c"}]}`,
	`{"type":"message","role":"user","content":[1,"two",null,{"no":"type"}]}`,
	`{"type":"message","role":"user","content":{"type":"input_text","text":"an object"}}`,
	`{"type":"message","role":"user","content":null}`,
	`{"type":"message","role":"user"}`,
	`{"type":"message","role":"robot","content":"hi"}`,
	`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`,
	`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"no_args","arguments":""}`,
	`{"type":"function_call","call_id":7,"name":null}`,
	`{"type":"function_call_output","call_id":"call_1","output":"18 degrees, cloudy"}`,
	`{"type":"function_call_output","call_id":"call_1","output":""}`,
	`{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"line one"},{"type":"input_image","image_url":"https://x/y.png"},{"type":"input_text","text":"line two"}]}`,
	`{"type":"function_call_output","call_id":"call_1"}`,
	`{"type":"custom_tool_call_output","call_id":"call_2","output":"custom"}`,
	`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thinking"}],"encrypted_content":"gAAAA"}`,
	`{"type":"web_search_call","id":"ws_1","status":"completed"}`,
	`{"type":"item_reference","id":"msg_1"}`,
	`{"content":"hi"}`,
	`[1,2]`,
	`"text"`,
	``,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"unterminated"`,
	"{\"role\":\"user\",\"content\":\"bad \xff\xfe utf-8\"}",
}
