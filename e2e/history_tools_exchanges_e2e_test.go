package e2e

import (
	"fmt"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestHistoryToolsRoundRecords: each upstream call of a tool exchange
// leaves its own exchange record. The exchange's record is the first
// round's: it committed the client's message, Recall's call and its
// result; the next round's record, of kind tool_round, sent all of those
// as history and committed the final answer; each reports its own
// round's usage. Rendered, the tool round's record shows the call and
// result it sent.
func TestHistoryToolsRoundRecords(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := e2etest.New(t, toolTenants())
			r := &toolRun{t: t, h: h, c: &chatClient, tenant: "oa", conv: "x1", stream: stream}
			r.send([]string{chatClient.user("hello")}) // seqs 1, 2
			h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"x"}`)}},
				upstreamtest.Reply{Content: "Nothing."})
			r.send([]string{chatClient.user("find x")}) // 3; the call 4, its result 5; the answer 6

			flush(t, h)
			a := h.API("rk-oa", "", "GET", "/recall/v1/conversations/x1/exchanges", "")
			var l exchangeList
			a.JSON(t, &l)
			if len(l.Data) != 3 {
				t.Fatalf("got %d records, want 3 (hello, and two rounds)", len(l.Data))
			}
			round, first := l.Data[0], l.Data[1]
			type view struct {
				Kind      string
				Stream    bool
				Included  []history.Span
				New       int
				Committed []history.Span
			}
			v := func(x exchangeView) view {
				return view{x.Kind, x.Stream, x.Included, x.NewMessages, x.Committed}
			}
			if got, want := v(first), (view{"chat", stream, []history.Span{{From: 1, To: 2}}, 1, []history.Span{{From: 3, To: 5}}}); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the first round's record: got %+v, want %+v", got, want)
			}
			if got, want := v(round), (view{"tool_round", stream, []history.Span{{From: 1, To: 5}}, 0, []history.Span{{From: 6, To: 6}}}); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("the second round's record: got %+v, want %+v", got, want)
			}
			if first.Tokens.ReportedInput == 0 || round.Tokens.ReportedInput <= first.Tokens.ReportedInput ||
				round.Tokens.EstimatedInput <= first.Tokens.EstimatedInput {
				t.Errorf("tokens: first %+v, round %+v; want each round's own usage, the second sending more", first.Tokens, round.Tokens)
			}
			a = h.API("rk-oa", "", "GET", "/recall/v1/conversations/x1/exchanges/"+round.ID+"?render=messages", "")
			var one exchangeView
			a.JSON(t, &one)
			if n := len(one.Messages); n != 5 || one.Messages[3].Kind != "history" || *one.Messages[4].Seq != 5 {
				t.Errorf("the tool round rendered %d messages %+v, want seqs 1 to 5 as history", n, one.Messages)
			}
		})
	}
}
