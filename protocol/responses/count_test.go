package responses

import (
	"testing"
	"unicode/utf8"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// throughChat is a plan.Counter that is not a *tokens.Counter: plan.Count
// counts an item through its chat rendition with it, as it counted every
// Responses item before Tokens.
type throughChat struct{ *tokens.Counter }

// countThroughChat is plan.Count of raw through its chat rendition.
func countThroughChat(c *tokens.Counter, enc tokens.Encoding, raw []byte) int {
	return plan.Count(throughChat{c}, enc, wire.Responses, raw)
}

// TestTokensCountsAsChat: an item Tokens counts counts exactly as its
// chat rendition does, in both encodings, so the budget decides as
// before; the common items are counted from their own bytes.
func TestTokensCountsAsChat(t *testing.T) {
	var c tokens.Counter
	for _, enc := range []tokens.Encoding{tokens.O200k, tokens.CL100k} {
		for _, raw := range countCorpus {
			got, ok := Codec{}.Tokens(&c, enc, []byte(raw))
			if !ok {
				continue
			}
			if want := countThroughChat(&c, enc, []byte(raw)); got != want {
				t.Errorf("%s: Tokens(%s) = %d, want %d", enc, raw, got, want)
			}
			if n := plan.Count(&c, enc, wire.Responses, []byte(raw)); n != got {
				t.Errorf("%s: plan.Count(%s) = %d, want Tokens' %d", enc, raw, n, got)
			}
		}
	}
	for _, i := range []int{0, 1, 3, 4, 5, 20, 21, 23, 25} { // text messages, calls, outputs
		raw := countCorpus[i]
		if _, ok := (Codec{}).Tokens(&c, tokens.O200k, []byte(raw)); !ok {
			t.Errorf("Tokens(%s) left the item to the chat rendition, want it counted", raw)
		}
	}
}

// FuzzTokens checks the same of any bytes: whatever Tokens counts, it
// counts as the chat rendition does, and it leaves invalid UTF-8 alone.
func FuzzTokens(f *testing.F) {
	for _, raw := range countCorpus {
		f.Add([]byte(raw))
	}
	var c tokens.Counter
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, enc := range []tokens.Encoding{tokens.O200k, tokens.CL100k} {
			got, ok := Codec{}.Tokens(&c, enc, raw)
			if !ok {
				continue
			}
			if !utf8.Valid(raw) {
				t.Fatalf("Tokens(%q) counted invalid UTF-8", raw)
			}
			if want := countThroughChat(&c, enc, raw); got != want {
				t.Fatalf("%s: Tokens(%q) = %d, want %d", enc, raw, got, want)
			}
		}
	})
}

// TestCountReadsTheItem: plan.Count counts a message item with Tokens,
// from the item's bytes, not through a chat rendition it writes.
func TestCountReadsTheItem(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	var c tokens.Counter
	for _, s := range []string{countCorpus[0], countCorpus[5]} {
		raw := []byte(s)
		plan.Count(&c, tokens.O200k, wire.Responses, raw) // the counter's tables, once
		if n := testing.AllocsPerRun(10, func() { plan.Count(&c, tokens.O200k, wire.Responses, raw) }); n != 0 {
			t.Errorf("plan.Count(%s) allocates %.0f times, want 0: it wrote the chat rendition", raw, n)
		}
	}
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
