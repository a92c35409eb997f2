package summary

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// fitsByBytes bounds a message's transcript line by its JSON's length
// plus 16: it must hold for every shape writeMessage renders.
func TestTranscriptLineNoLongerThanItsJSON(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"hi"}`,
		`{"content":"x"}`,
		`{"role":"assistant","refusal":"x"}`,
		`{"role":"user","content":"\u00e9\u00e9 \"quoted\" \n"}`,
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"` + strings.Repeat("r", 2000) + `"}`,
		`{"role":"assistant","content":"` + strings.Repeat("long ", 2000) + `"}`,
	} {
		var b strings.Builder
		writeMessage(&b, &history.Message{Raw: []byte(raw)})
		if b.Len() > len(raw)+16 {
			t.Errorf("%.60s: the line has %d bytes, the JSON %d: fitsByBytes would undercount", raw, b.Len(), len(raw))
		}
	}
}

// TestTranscriptReadsEveryProtocol: the summariser's transcript shows a
// Responses function call and its output, and an Anthropic tool_use and
// tool_result, as it shows chat's (before, they were dropped or shown as
// bare block types).
func TestTranscriptReadsEveryProtocol(t *testing.T) {
	msgs := []history.Message{
		{Protocol: wire.Responses, Raw: []byte(`{"type":"function_call","call_id":"c1","name":"lookup","arguments":"{\"q\":\"x\"}"}`)},
		{Protocol: wire.Responses, Raw: []byte(`{"type":"function_call_output","call_id":"c1","output":"forty-two"}`)},
		{Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"t1","name":"fetch","input":{"u":1}}]}`)},
		{Protocol: wire.Messages, Raw: []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"page text"}]}`)},
		{Protocol: wire.Responses, Raw: []byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is forty-two.","annotations":[]}]}`)},
		{Protocol: wire.Responses, Raw: []byte(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAsecret"}`)},
		{Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque"},{"type":"text","text":"The page says hello."}]}`)},
	}
	var b strings.Builder
	for i := range msgs {
		writeMessage(&b, &msgs[i])
	}
	for _, want := range []string{`assistant called lookup({"q":"x"}) [c1]`, "tool result (c1): forty-two",
		`assistant called fetch({"u":1}) [t1]`, "tool result (t1): page text",
		"assistant: It is forty-two.\n", "assistant: The page says hello.\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("transcript %q lacks %q", b.String(), want)
		}
	}
	for _, secret := range []string{"gAAAsecret", "opaque", "hm"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("transcript %q shows the opaque %q", b.String(), secret)
		}
	}
}

// An episode's fallback title is the user's words, not the
// <system-reminder> blocks Claude Code puts before them.
func TestFallbackTitleLeavesOutSystemReminders(t *testing.T) {
	ts := []turn{{msgs: []history.Message{{Role: wire.RoleUser, Protocol: wire.Messages, Raw: []byte(
		`{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer the user's questions, you can use the following context:\n</system-reminder>"},` +
			`{"type":"text","text":"<system-reminder>The skills are listed.</system-reminder>\n\n\nfix the login bug in auth.go please"}]}`)}}}}
	if got, want := fallbackTitle(ts), "fix the login bug in auth.go please"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
