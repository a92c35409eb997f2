package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/summary"
)

// hugeSummary is about 450,000 tokens of sentences: far over gpt-4o's
// window.
var hugeSummary = strings.Repeat("The user likes green tea in the morning. ", 50000)

// A summariser that answers far more than summary.max_tokens cannot make
// its conversation unusable: the summary stored is cut to max_tokens, and
// the chats after it are served with it.
func TestHugeSummariserAnswerIsStoredWithinMaxTokens(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(3, 1), Summary: func(*summary.Config) {}})
	h.Up.EnqueueSummary(upstreamtest.Reply{Content: hugeSummary})
	for i := 1; i <= 4; i++ {
		if r := h.Post("/v1/chat/completions", key, "huge-1", e2etest.ChatBody(fmt.Sprint("turn ", i), false)); r.Status != 200 {
			t.Fatalf("turn %d: got %d %s", i, r.Status, r.Body)
		}
		h.WaitDone("huge-1")
	}
	if d := h.WaitJob("huge-1"); d.Outcome != summary.Landed {
		t.Fatalf("job: %+v, want landed", d)
	}
	// One job of one call, counted per job with its prompt tokens.
	if calls, jobs := h.Metric(`recall_summary_job_calls_sum{tenant="default"}`), h.Metric(`recall_summary_job_calls_count{tenant="default"}`); calls != 1 || jobs != 1 {
		t.Errorf("recall_summary_job_calls: sum %v over %v jobs, want 1 call in 1 job", calls, jobs)
	}
	if n := h.Metric(`recall_summary_job_prompt_tokens_sum{tenant="default"}`); n <= 0 {
		t.Errorf("recall_summary_job_prompt_tokens_sum %v, want the call's prompt tokens", n)
	}
	s := h.Meta(h.PassNamespace(key), "huge-1").Summary
	if s == nil || s.Tokens > 1000 || !strings.HasPrefix(hugeSummary, s.Text) {
		t.Fatalf("stored summary %.200v, want the answer cut to at most 1000 tokens", s)
	}
	for i := 5; i <= 6; i++ {
		r := h.Post("/v1/chat/completions", key, "huge-1", e2etest.ChatBody(fmt.Sprint("turn ", i), false))
		if r.Status != 200 {
			t.Fatalf("turn %d after the summary: got %d %s, want 200", i, r.Status, r.Body)
		}
		h.WaitDone("huge-1")
		if got := e2etest.RenderAll(h.Up.Last().Messages); len(got) < 2 || !strings.HasPrefix(got[0], "system:"+plan.SummaryPrefix+"The user likes") {
			t.Errorf("turn %d: upstream got %.200q, want the summary first", i, got)
		}
	}
}

// A conversation whose stored summary is far over the model's window (it
// was stored before summaries were bounded, or imported) still serves a
// one-word chat: the summary is cut to fit, and X-Recall-Curation says so.
func TestStoredHugeSummaryIsCutToServeTheChat(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: summaryOn(10, 3), Summary: func(*summary.Config) {}})
	for i := 1; i <= 3; i++ {
		if r := h.Post("/v1/chat/completions", key, "huge-2", e2etest.ChatBody(fmt.Sprint("turn ", i), false)); r.Status != 200 {
			t.Fatalf("turn %d: got %d %s", i, r.Status, r.Body)
		}
		h.WaitDone("huge-2")
	}
	k := history.Key{Tenant: h.PassNamespace(key), Conversation: "huge-2"}
	if _, err := h.History.Commit(context.Background(), k, history.Change{Summary: &history.SummaryChange{
		Incarnation: h.Meta(k.Tenant, k.Conversation).Incarnation,
		Summary:     history.Summary{Text: hugeSummary, Through: 4, Turns: 2, Tokens: 450000},
	}}); err != nil {
		t.Fatal(err)
	}
	r := h.Post("/v1/chat/completions", key, "huge-2", e2etest.ChatBody("hi", false))
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("huge-2")
	if got := r.Header.Get("X-Recall-Curation"); !strings.Contains(got, "summary=cut") {
		t.Errorf("X-Recall-Curation %q, want it to say the summary was cut", got)
	}
	got := e2etest.RenderAll(h.Up.Last().Messages)
	if len(got) != 4 || !strings.HasPrefix(got[0], "system:"+plan.SummaryPrefix+"The user likes") || got[3] != "user:hi" {
		t.Fatalf("upstream got %.300q, want the cut summary, turn 3 and hi", got)
	}
	if n := h.CountTokens([]byte(`{"role":"system","content":` + fmt.Sprintf("%q", strings.TrimPrefix(got[0], "system:")) + `}`)); n > 1000 {
		t.Errorf("the summary sent counts %d tokens, want at most summary.max_tokens 1000", n)
	}
}
