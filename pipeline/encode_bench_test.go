package pipeline

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// BenchmarkEncodePlanBesideASummary is a request's encoding of a
// 50-turn Responses conversation with an instruction and a 400-word
// summary (a chat message), to a Responses upstream: the native Responses
// row of the load script.
func BenchmarkEncodePlanBesideASummary(b *testing.B) {
	msgs := []plan.Message{
		{Kind: plan.Instruction, Protocol: wire.Responses, Raw: []byte(`{"type":"message","role":"developer","content":"Answer briefly and cite the turn you draw on."}`)},
		{Kind: plan.SummaryMessage, Protocol: wire.ChatCompletions, Raw: plan.Inject("developer", strings.Repeat("They talked of the weather and the harbour. ", 50))},
	}
	for i := range 50 {
		msgs = append(msgs,
			plan.Message{Kind: plan.History, Protocol: wire.Responses, Raw: []byte(`{"role":"user","content":"question ` + strings.Repeat("q", i) + `"}`)},
			plan.Message{Kind: plan.History, Protocol: wire.Responses, Raw: []byte(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":"answer ` + strings.Repeat("a", i) + `"}]}`)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := EncodePlan(wire.Responses, msgs); err != nil {
			b.Fatal(err)
		}
	}
}
