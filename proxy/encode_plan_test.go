package proxy

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// TestEncodePlanForAnotherProtocol: a context with messages of several
// protocols goes through the canonical model into the upstream's: an
// Anthropic answer with signed thinking and a tool_use, and its
// tool_result, become a chat assistant message with tool_calls and a tool
// message, the thinking left out (only Anthropic can read it); the
// instructions and the summary stay apart. A context all in the
// upstream's protocol goes as stored.
func TestEncodePlanForAnotherProtocol(t *testing.T) {
	msgs := []plan.Message{
		{Kind: plan.Instruction, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"system","content":"be brief"}`)},
		{Kind: plan.History, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"user","content":"look it up"}`)},
		{Kind: plan.History, Protocol: wire.Messages, Raw: []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"q":"x"}}]}`)},
		{Kind: plan.New, Protocol: wire.Messages, Raw: []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"42"}]}`)},
	}
	instr, conv, asStored, err := encodePlan(wire.ChatCompletions, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if asStored || len(instr) != 1 || len(conv) != 3 {
		t.Fatalf("got %d instructions, %d messages (as stored: %v), want 1, 3, false: %q", len(instr), len(conv), asStored, conv)
	}
	if strings.Contains(string(conv[1]), "thinking") || strings.Contains(string(conv[1]), "sig") {
		t.Errorf("thinking went to a chat upstream: %s", conv[1])
	}
	if gjson.GetBytes(conv[1], "tool_calls.0.id").String() != "toolu_1" || gjson.GetBytes(conv[1], "tool_calls.0.function.arguments").String() != `{"q":"x"}` {
		t.Errorf("assistant message: got %s, want its tool call", conv[1])
	}
	if gjson.GetBytes(conv[2], "role").String() != "tool" || gjson.GetBytes(conv[2], "tool_call_id").String() != "toolu_1" || gjson.GetBytes(conv[2], "content").String() != "42" {
		t.Errorf("tool result: got %s, want a tool message answering toolu_1", conv[2])
	}

	same := []plan.Message{msgs[2], msgs[3]}
	_, conv, asStored, err = encodePlan(wire.Messages, same)
	if err != nil || !asStored || string(conv[0]) != string(msgs[2].Raw) {
		t.Errorf("same protocol: got %q as stored %v (%v), want the stored bytes", conv, asStored, err)
	}
}
