package main

import (
	"encoding/json"
	"testing"
)

// The CLI's table reads every protocol's messages: Responses items and
// Anthropic blocks show their text and calls, not "[output_text]" or an
// empty row, and an agent's <system-reminder> blocks are left out.
func TestContentReadsEveryProtocol(t *testing.T) {
	for _, tc := range []struct {
		name, raw, role, content string
	}{
		{"chat", `{"role":"user","content":"hello"}`, "user", "hello"},
		{"chat call", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{}"}}]}`, "assistant", "→ read() call_1"},
		{"chat result", `{"role":"tool","tool_call_id":"call_1","content":"42"}`, "tool(call_1)", "42"},
		{"responses message", `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is 42.","annotations":[]}]}`, "assistant", "It is 42."},
		{"responses input", `{"type":"message","role":"user","content":[{"type":"input_text","text":"what is it?"}]}`, "user", "what is it?"},
		{"responses call", `{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{}"}`, "assistant", "→ weather() call_2"},
		{"responses output", `{"type":"function_call_output","call_id":"call_2","output":"sunny"}`, "tool(call_2)", "← sunny"},
		{"responses reasoning", `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}`, "assistant", "[reasoning]"},
		{"anthropic blocks", `{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]}`, "assistant", "Reading. → Read() toolu_1"},
		{"anthropic result", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"the secret is 42"}]}`, "user", "← the secret is 42"},
		{"gemini text", `{"role":"model","parts":[{"text":"plan","thought":true},{"text":"It is 42."}]}`, "model", "It is 42."},
		{"gemini call", `{"role":"model","parts":[{"functionCall":{"name":"weather","args":{}},"thoughtSignature":"c2ln"}]}`, "model", "→ weather()"},
		{"gemini response", `{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"sunny"}}}]}`, "user", "← weather {\"output\":\"sunny\"}"},
		{"system reminders", `{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use the context.\n</system-reminder>"},{"type":"text","text":"fix the test"}]}`, "user", "fix the test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := role(json.RawMessage(tc.raw)); got != tc.role {
				t.Errorf("role: got %q, want %q", got, tc.role)
			}
			if got := content(json.RawMessage(tc.raw)); got != tc.content {
				t.Errorf("content: got %q, want %q", got, tc.content)
			}
		})
	}
}
