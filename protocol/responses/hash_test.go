package responses

import (
	"testing"

	"github.com/recallproxy/recall/wire"
)

// Items a client resends must hash like the copy Recall stored from the
// upstream's output, whatever the SDK did to them on the way.
func TestHashResentItems(t *testing.T) {
	// As the upstream returns an output message (and Recall stores it).
	const asReturned = `{"id":"msg_67c","type":"message","status":"completed","role":"assistant","phase":null,` +
		`"content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Paris is sunny."}]}`
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"openai-agents resends as received, keys reordered", asReturned,
			`{"content":[{"annotations":[],"text":"Paris is sunny.","type":"output_text","logprobs":[]}],"id":"msg_67c","role":"assistant","status":"completed","type":"message"}`, true},
		{"codex resends bare parts without id or status", asReturned,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Paris is sunny."}]}`, true},
		{"recall's own id on the rendered copy", asReturned,
			`{"id":"msg_abc_0","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Paris is sunny."}],"role":"assistant"}`, true},
		{"easy message with string content", asReturned, `{"role":"assistant","content":"Paris is sunny."}`, true},
		{"annotations dropped by the client", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"see x","annotations":[{"type":"url_citation","url":"https://x"}]}]}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"see x"}]}`, true},
		{"different text", asReturned, `{"role":"assistant","content":"Paris is rainy."}`, false},
		{"different role", `{"role":"user","content":"hi"}`, `{"role":"assistant","content":"hi"}`, false},
		{"easy user message equals its typed input_text form", `{"role":"user","content":"hi"}`,
			`{"type":"message","role":"user","id":"msg_1","content":[{"type":"input_text","text":"hi"}]}`, true},
		{"two parts differ from one", `{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`,
			`{"role":"user","content":"ab"}`, false},
		{"image parts compare by url", `{"role":"user","content":[{"type":"input_image","image_url":"https://a/1.png","detail":"auto"}]}`,
			`{"role":"user","content":[{"type":"input_image","image_url":"https://a/2.png","detail":"auto"}]}`, false},
		{"function_call without id and status, arguments spaced", `{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}`,
			`{"type":"function_call","call_id":"call_1","name":"f","arguments":"{ \"a\": 1 }"}`, true},
		{"function_call with another call_id", `{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`,
			`{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"}`, false},
		{"function_call_output string equals one input_text part", `{"type":"function_call_output","call_id":"call_1","output":"42"}`,
			`{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"42"}],"id":"fco_1","status":"completed"}`, true},
		{"function_call_output with other output", `{"type":"function_call_output","call_id":"call_1","output":"42"}`,
			`{"type":"function_call_output","call_id":"call_1","output":"43"}`, false},
		{"reasoning resent without id or status", `{"id":"rs_1","type":"reasoning","status":"completed","summary":[],"encrypted_content":"gAAA"}`,
			`{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}`, true},
		{"reasoning with other encrypted content", `{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}`,
			`{"type":"reasoning","summary":[],"encrypted_content":"gBBB"}`, false},
		{"local_shell_call_output keeps its id", `{"type":"local_shell_call_output","id":"call_1","output":"ok"}`,
			`{"type":"local_shell_call_output","id":"call_2","output":"ok"}`, false},
		{"a lone surrogate does not swallow the escape after it", `{"type":"reasoning","summary":[{"type":"summary_text","text":"\ud83d\u0041"}]}`,
			`{"type":"reasoning","summary":[{"type":"summary_text","text":"\ud83d"}]}`, false},
		{"a lone surrogate reads as U+FFFD, as encoding/json reads it", `{"type":"reasoning","summary":[{"type":"summary_text","text":"\ud83d"}]}`,
			`{"type":"reasoning","summary":[{"type":"summary_text","text":"\ufffd"}]}`, true},
		{"message and function_call never equal", `{"role":"assistant","content":"f"}`,
			`{"type":"function_call","call_id":"","name":"f","arguments":""}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := Codec{}.Hash([]byte(tt.a)), Codec{}.Hash([]byte(tt.b))
			if (ha == hb) != tt.same {
				t.Errorf("equal hashes: got %v, want %v\n a: %s\n b: %s", ha == hb, tt.same, tt.a, tt.b)
			}
		})
	}
}

// The Response object Recall renders lists each stored output item with
// Recall's ids: the rendered item a client resends must match the stored
// upstream item.
func TestHashRenderedOutputMatchesStored(t *testing.T) {
	stored := []byte(`{"id":"msg_up","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"hi"}]}`)
	a := sdkAnswer()
	a.Protocol, a.Stored = wire.Responses, [][]byte{stored}
	items := outputItems(a, "resp_r1")
	if len(items) != 1 {
		t.Fatalf("items: got %d, want 1", len(items))
	}
	if got := parse(items[0]).Get("id").Str; got != "msg_r1_0" {
		t.Errorf("rendered id: got %q, want msg_r1_0", got)
	}
	if (Codec{}).Hash(items[0]) != (Codec{}).Hash(stored) {
		t.Errorf("rendered %s hashes unlike stored %s", items[0], stored)
	}
}
