package tracing_test

import (
	"testing"

	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/wire"
)

func TestContentEnabled(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"", false}, {"false", false}, {"no_content", false}, {"true", true}, {"TRUE", true}, {"SPAN_ONLY", true}, {"span_and_event", true}, {"event_only", false}} {
		got := tracing.ContentEnabled(func(k string) string {
			if k == tracing.ContentVariable {
				return tc.value
			}
			return ""
		})
		if got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestMessagesInTheConventionsShape(t *testing.T) {
	msgs := []wire.Message{
		{Role: wire.RoleDeveloper, Parts: []wire.Part{{Kind: wire.Text, Text: "be brief"}}},
		{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: "weather?"}, {Kind: wire.Image, URL: "data:image/png;base64,AAAA"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{{Kind: wire.ToolCall, CallID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Kind: wire.ToolCall, CallID: "c2", Name: "bad", Arguments: `not json`}, {Kind: wire.Opaque, Raw: []byte(`{"encrypted":"x"}`)}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, CallID: "c1", Text: "rainy"}}},
	}
	want := `[{"role":"system","parts":[{"type":"text","content":"be brief"}]},` +
		`{"role":"user","parts":[{"type":"text","content":"weather?"},{"type":"file_data","modality":"image"}]},` +
		`{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"get_weather","arguments":{"city":"Paris"}},{"type":"tool_call","id":"c2","name":"bad","arguments":"not json"}]},` +
		`{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":"rainy"}],"finish_reason":"tool_calls"}]`
	if got := tracing.Messages(msgs, "tool_calls"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
