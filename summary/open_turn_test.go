package summary

import (
	"testing"

	"github.com/recallproxy/recall/history"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// A turn that ends with tool calls awaiting their results is open in
// every protocol: a summary that ended there would leave the results
// after it with their call summarised away.
func TestTurnEndingOnToolCallsIsOpenInEveryProtocol(t *testing.T) {
	user := history.Message{Role: wire.RoleUser, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"user","content":"go"}`)}
	for _, tc := range []struct {
		name  string
		last  history.Message
		wantO bool
	}{
		{"chat calls", history.Message{Role: wire.RoleAssistant, Protocol: wire.ChatCompletions,
			Raw: []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`)}, true},
		{"chat text", history.Message{Role: wire.RoleAssistant, Protocol: wire.ChatCompletions,
			Raw: []byte(`{"role":"assistant","content":"done"}`)}, false},
		{"responses function_call", history.Message{Role: wire.RoleAssistant, Protocol: wire.Responses,
			Raw: []byte(`{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{}","status":"completed"}`)}, true},
		{"responses message", history.Message{Role: wire.RoleAssistant, Protocol: wire.Responses,
			Raw: []byte(`{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"done","annotations":[]}]}`)}, false},
		{"messages tool_use", history.Message{Role: wire.RoleAssistant, Protocol: wire.Messages,
			Raw: []byte(`{"role":"assistant","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}`)}, true},
		{"messages text", history.Message{Role: wire.RoleAssistant, Protocol: wire.Messages,
			Raw: []byte(`{"role":"assistant","content":[{"type":"text","text":"done"}]}`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (turn{msgs: []history.Message{user, tc.last}}).open(); got != tc.wantO {
				t.Errorf("open: got %v, want %v", got, tc.wantO)
			}
		})
	}
}
