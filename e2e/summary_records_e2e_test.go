package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/summary"
)

func ofKind(recs []exchangeView, kind string) []exchangeView {
	var out []exchangeView
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// Every summariser call leaves an exchange record of kind "summary" on the
// conversation it summarises: its model, protocols, status, times and
// tokens, the seqs it folded in (Included) and the summary it extended
// (Summary), and none of the messages' text.
func TestSummaryCallsLeaveExchangeRecords(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(4, 2), Summary: func(*summary.Config) {}})
	conv := "sum-rec"
	r := &resender{t: t, c: h.Client(key, conv), msgs: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}}
	summariseFive(t, h, conv, r.say)
	sums := ofKind(exchanges(t, h, conv), "summary")
	if len(sums) != 1 {
		t.Fatalf("got %d summary records, want 1", len(sums))
	}
	s := sums[0]
	if s.Status != "answered" || s.HTTPStatus != 200 || s.Model != "gpt-4o" || s.Upstream != "chat.completions" || s.Stream {
		t.Errorf("got status %q (%d), model %q, upstream %q, stream %v; want answered (200), gpt-4o, chat.completions, not streamed",
			s.Status, s.HTTPStatus, s.Model, s.Upstream, s.Stream)
	}
	if want := []history.Span{{From: 1, To: 6}}; !slices.Equal(s.Included, want) || s.Summary != nil {
		t.Errorf("first summary: got included %+v, extending %+v; want turns 1-3 (seqs 1-6), extending none", s.Included, s.Summary)
	}
	if tk := s.Tokens; tk.EstimatedInput <= tk.History || tk.History == 0 || tk.Instructions == 0 || tk.ReportedInput == 0 || tk.Output == 0 {
		t.Errorf("tokens %+v: want the estimate (instructions and history), the reported input and the output", tk)
	}

	for i := 6; i <= 8; i++ {
		r.say(fmt.Sprintf("turn %d", i))
	}
	if d := h.WaitJob(conv); d.Outcome != summary.Landed {
		t.Fatalf("second job: %+v, want landed", d)
	}
	recs := exchanges(t, h, conv)
	sums = ofKind(recs, "summary")
	if len(sums) != 2 {
		t.Fatalf("got %d summary records, want 2", len(sums))
	}
	s = sums[0] // newest first
	if want := []history.Span{{From: 7, To: 12}}; !slices.Equal(s.Included, want) || s.Summary == nil || s.Summary.Through != 6 || s.Summary.Tokens == 0 {
		t.Errorf("second summary: got included %+v, extending %+v; want turns 4-6 (seqs 7-12), extending the summary through seq 6", s.Included, s.Summary)
	}
	raw, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "turn 1") || strings.Contains(string(raw), "be brief") {
		t.Errorf("the records hold message text: %s", raw)
	}
}

// A summariser call the upstream refuses leaves a record too, with status
// upstream_error and the upstream's HTTP status.
func TestFailedSummaryCallLeavesARecord(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(4, 2), Summary: func(*summary.Config) {}})
	conv := "sum-fail"
	h.Up.EnqueueSummary(upstreamtest.Reply{Status: 503})
	r := &resender{t: t, c: h.Client(key, conv)}
	for i := 1; i <= 5; i++ {
		r.say(fmt.Sprintf("turn %d", i))
	}
	if d := h.WaitJob(conv); d.Outcome != summary.Failed {
		t.Fatalf("job: %+v, want failed", d)
	}
	sums := ofKind(exchanges(t, h, conv), "summary")
	i := slices.IndexFunc(sums, func(x exchangeView) bool { return x.Status == "upstream_error" })
	if i < 0 {
		t.Fatalf("got summary records %+v, want one with status upstream_error", sums)
	}
	if s := sums[i]; s.HTTPStatus != 503 || s.Error == "" || len(s.Included) == 0 || s.Tokens.Output != 0 {
		t.Errorf("got %+v, want HTTP 503, an error code, the seqs it would have folded and no output", s.ExchangeRecord)
	}
}
