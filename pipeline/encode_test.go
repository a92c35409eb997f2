package pipeline

import (
	"bytes"
	"slices"
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
	instr, conv, asStored, err := EncodePlan(wire.ChatCompletions, msgs)
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
	_, conv, asStored, err = EncodePlan(wire.Messages, same)
	if err != nil || !asStored || string(conv[0]) != string(msgs[2].Raw) {
		t.Errorf("same protocol: got %q as stored %v (%v), want the stored bytes", conv, asStored, err)
	}
}

// TestEncodePlanKeepsTheConversationBesideASummary: a summary (a chat
// message) beside a conversation stored in the upstream's protocol goes
// through the canonical model alone; the conversation goes as stored, the
// same bytes with or without a summary, neither decoded nor encoded again.
func TestEncodePlanKeepsTheConversationBesideASummary(t *testing.T) {
	msgs := []plan.Message{
		{Kind: plan.Instruction, Protocol: wire.Responses, Raw: []byte(`{"type":"message","role":"developer","content":"be brief"}`)},
		{Kind: plan.SummaryMessage, Protocol: wire.ChatCompletions, Raw: plan.Inject("developer", "They said hello.")},
		{Kind: plan.History, Protocol: wire.Responses, Raw: []byte(`{"role":"user","content":"look it up"}`)},
		{Kind: plan.History, Protocol: wire.Responses, Raw: []byte(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"42"}]}`)},
		{Kind: plan.New, Protocol: wire.Responses, Raw: []byte(`{"role":"user","content":"thanks"}`)},
	}
	instr, conv, asStored, err := EncodePlan(wire.Responses, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if !asStored || len(conv) != 3 {
		t.Fatalf("got %d messages (as stored: %v), want 3 as stored", len(conv), asStored)
	}
	for i, raw := range conv {
		if want := msgs[2+i].Raw; &raw[0] != &want[0] || len(raw) != len(want) {
			t.Errorf("message %d: got %s, want the stored bytes %s", i, raw, want)
		}
	}
	if len(instr) != 2 || gjson.GetBytes(instr[1], "role").String() != "developer" ||
		!strings.Contains(gjson.GetBytes(instr[1], "content").Raw, "They said hello.") {
		t.Fatalf("instructions: got %q, want the instruction and the summary as Responses items", instr)
	}
}

// TestEncodePlanTranslatesASummaryOnce: beside instructions stored in the
// upstream's protocol, a summary (a chat message) is translated alone,
// once: the instructions go as stored, the summary as the upstream's codec
// writes it in the whole group, and a second request with the same
// summary decodes nothing. An instruction part with a foreign message
// that is not an instruction by its role goes as the codec writes the
// whole part, from the memo of translations the second time.
func TestEncodePlanTranslatesASummaryOnce(t *testing.T) {
	stored := map[wire.Protocol]string{
		wire.Responses: `{"type":"message","role":"developer","content":"be brief"}`,
		wire.Messages:  `{"role":"system","content":"be brief"}`,
		wire.Gemini:    `{"role":"system","parts":[{"text":"be brief"}]}`,
	}
	for up, instr := range stored {
		t.Run(up.String(), func(t *testing.T) {
			msgs := []plan.Message{
				{Kind: plan.Instruction, Protocol: up, Raw: []byte(instr)},
				{Kind: plan.SummaryMessage, Protocol: wire.ChatCompletions, Raw: plan.Inject("system", "They said hello in "+up.String()+".")},
				{Kind: plan.New, Protocol: up, Raw: []byte(`{"role":"user","content":"thanks"}`)},
			}
			var canon []wire.Message
			for _, m := range msgs[:2] {
				cm, err := wire.For(m.Protocol).Decode(m.Raw)
				if err != nil {
					t.Fatal(err)
				}
				canon = append(canon, cm)
			}
			whole, err := wire.For(up).Encode(nil, canon)
			if err != nil || len(whole) != 2 {
				t.Fatalf("the codec wrote %d instructions (%v), want 2", len(whole), err)
			}
			for round := range 2 {
				before := translationCalls.Load()
				got, _, _, err := EncodePlan(up, msgs)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2 || &got[0][0] != &msgs[0].Raw[0] || len(got[0]) != len(msgs[0].Raw) {
					t.Fatalf("round %d: got %q, want the stored instruction first", round, got)
				}
				if string(got[1]) != string(whole[1]) {
					t.Errorf("round %d: summary %s, want %s (the codec's, in the whole group)", round, got[1], whole[1])
				}
				if calls := translationCalls.Load() - before; calls != uint64(1-round) {
					t.Errorf("round %d: %d translations, want %d", round, calls, 1-round)
				}
			}
		})
	}

	t.Run("not an instruction", func(t *testing.T) {
		msgs := []plan.Message{
			{Kind: plan.Instruction, Protocol: wire.Responses, Raw: []byte(stored[wire.Responses])},
			{Kind: plan.Instruction, Protocol: wire.ChatCompletions, Raw: []byte(`{"role":"user","content":"odd"}`)},
		}
		whole := reference(t, wire.Responses, msgs)
		for round := range 2 {
			before := translationCalls.Load()
			got, _, _, err := EncodePlan(wire.Responses, msgs)
			if err != nil || !slices.EqualFunc(got, whole, bytes.Equal) {
				t.Fatalf("round %d: got %q (%v), want the codec's %q", round, got, err, whole)
			}
			if &got[0][0] == &msgs[0].Raw[0] {
				t.Errorf("round %d: the stored instruction went as stored beside a foreign message encoded whole", round)
			}
			if calls := translationCalls.Load() - before; round == 1 && calls != 0 {
				t.Errorf("round %d: %d decodes, want none", round, calls)
			}
		}
	})
}
