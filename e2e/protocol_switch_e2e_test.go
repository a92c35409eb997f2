package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestAToolLoopBegunOnResponsesContinuesOnChat: a conversation whose tool
// call came through the Responses API (stored as Responses items) is
// continued on /v1/chat/completions with the tool's result: the chat path
// sends the stored call as chat completions takes it (an assistant
// message with tool_calls, which the strict fake pairs with the result),
// never as the Responses API stored it.
func TestAToolLoopBegunOnResponsesContinuesOnChat(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_w1", Name: "weather", Arguments: `{"city":"Oslo"}`}}})
	r := h.Post("/v1/responses", "rk-oa", "switch-1", `{"model":"gpt-4.1","input":"what is the weather in Oslo?",`+
		`"tools":[{"type":"function","name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`)
	if r.Status != 200 || !strings.Contains(r.Body, "function_call") {
		t.Fatalf("the Responses call: %d %s, want a function call", r.Status, r.Body)
	}
	h.WaitDone("switch-1")
	r = h.Post("/v1/chat/completions", "rk-oa", "switch-1", `{"model":"gpt-4.1","messages":[{"role":"tool","tool_call_id":"call_w1","content":"sunny, 21 C"}],`+
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	if r.Status != 200 {
		t.Fatalf("the tool's result on chat completions: %d %s, want the loop continued", r.Status, r.Body)
	}
	h.WaitDone("switch-1")
	sent := h.Up.Last()
	var roles []string
	for _, m := range sent.Messages {
		roles = append(roles, gjson.GetBytes(m, "role").Str)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool" {
		t.Errorf("the chat call's messages: roles %q, want user,assistant,tool", got)
	}
	if len(sent.Messages) > 1 && gjson.GetBytes(sent.Messages[1], "tool_calls.0.id").Str != "call_w1" {
		t.Errorf("the stored call went as %s, want an assistant message calling call_w1", sent.Messages[1])
	}
}
