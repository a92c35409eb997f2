package wire_test

import (
	"testing"

	_ "github.com/recallproxy/recall/protocol/chat"
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// Every protocol's codec reads the words of its messages: Responses
// input_text and output_text parts, function calls and their outputs,
// Anthropic text, tool_use and tool_result blocks, as well as chat
// completions' content and tool calls; images, reasoning and thinking add
// nothing.
func TestTextReadsEveryProtocol(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    wire.Protocol
		raw  string
		want string
	}{
		{"chat string content", wire.ChatCompletions, `{"role":"user","content":"what is \"BM25\"?"}`, `what is "BM25"?`},
		{"chat text parts, not images", wire.ChatCompletions, `{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/cat.png"}},{"type":"text","text":"here"}]}`, "look\nhere"},
		{"chat tool calls", wire.ChatCompletions, `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]}`, "get_weather\n{\"city\":\"Oslo\"}"},
		{"chat tool result", wire.ChatCompletions, `{"role":"tool","tool_call_id":"c1","content":"rain in Oslo"}`, "rain in Oslo"},
		{"chat refusal", wire.ChatCompletions, `{"role":"assistant","content":null,"refusal":"I cannot"}`, "I cannot"},
		{"responses input_text", wire.Responses, `{"type":"message","role":"user","content":[{"type":"input_text","text":"what is it?"},{"type":"input_image","image_url":"https://x/cat.png"}]}`, "what is it?"},
		{"responses output_text", wire.Responses, `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"It is 42.","annotations":[]}]}`, "It is 42."},
		{"responses refusal", wire.Responses, `{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I cannot"}]}`, "I cannot"},
		{"responses string content", wire.Responses, `{"role":"user","content":"plain words"}`, "plain words"},
		{"responses function call", wire.Responses, `{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Oslo\"}"}`, "weather\n{\"city\":\"Oslo\"}"},
		{"responses function output", wire.Responses, `{"type":"function_call_output","call_id":"call_2","output":"sunny in Oslo"}`, "sunny in Oslo"},
		{"responses function output parts", wire.Responses, `{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"sunny"},{"type":"input_text","text":"warm"}]}`, "sunny\nwarm"},
		{"responses reasoning", wire.Responses, `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hm"}],"encrypted_content":"gAAA"}`, ""},
		{"messages string", wire.Messages, `{"role":"user","content":"hello there"}`, "hello there"},
		{"messages blocks", wire.Messages, `{"role":"assistant","content":[{"type":"thinking","thinking":"secret musing","signature":"s"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a.go"}}]}`, "Reading.\nRead\n{\"path\":\"a.go\"}"},
		{"messages tool_result", wire.Messages, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"the secret is 42"}]}`, "the secret is 42"},
		{"messages tool_result blocks", wire.Messages, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"line one"},{"type":"text","text":"line two"}]},{"type":"text","text":"go on"}]}`, "line one\nline two\ngo on"},
		{"messages redacted thinking", wire.Messages, `{"role":"assistant","content":[{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"Done."}]}`, "Done."},
		{"gemini text, not thoughts", wire.Gemini, `{"role":"model","parts":[{"text":"musing","thought":true},{"text":"It is 42.","thoughtSignature":"c2ln"}]}`, "It is 42."},
		{"gemini function call", wire.Gemini, `{"role":"model","parts":[{"functionCall":{"name":"weather","args":{"city":"Oslo"}}}]}`, "weather\n{\"city\":\"Oslo\"}"},
		{"gemini function response", wire.Gemini, `{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"result":"sunny in Oslo"}}}]}`, "sunny in Oslo"},
		{"not a message", wire.Responses, `[1,2]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(wire.For(tt.p).Text(nil, []byte(tt.raw))); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// RunePrefix cuts on a rune boundary at or before n bytes, and keeps a
// string no longer than n whole.
func TestRunePrefix(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		n       int
		want    string
	}{
		{"shorter", "abc", 5, "abc"},
		{"exact", "abc", 3, "abc"},
		{"ascii", "abcdef", 4, "abcd"},
		{"inside a rune", "aé", 2, "a"},
		{"after a rune", "aéb", 3, "aé"},
		{"inside the first rune", "日本", 2, ""},
		{"zero", "abc", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.RunePrefix(tc.s, tc.n); got != tc.want {
				t.Errorf("RunePrefix(%q, %d): got %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}
