package summary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

// A summariser answer longer than summary.max_tokens is cut after its last
// sentence that fits: the stored summary never exceeds max_tokens.
func TestSummaryAnswerOverMaxTokensIsCut(t *testing.T) {
	f := newFixture(t, func(p *config.Policy) { p.Summary.MaxTokens = 100 })
	f.write("c", 1, 6, func(i int) string { return fmt.Sprint("fact ", i) })
	huge := strings.Repeat("The user likes green tea in the morning. ", 20000) // about 180,000 tokens
	f.up.EnqueueSummary(upstreamtest.Reply{Content: huge})
	m := f.manager()
	meta, err := m.Summarize(context.Background(), history.Key{Tenant: "acme", Conversation: "c"})
	if err != nil {
		t.Fatal(err)
	}
	s := meta.Summary
	if s == nil {
		t.Fatal("no summary landed")
	}
	if s.Tokens > 100 || s.Turns != 5 {
		t.Errorf("summary of %d tokens covering %d turns, want at most 100 covering 5", s.Tokens, s.Turns)
	}
	if !strings.HasPrefix(huge, s.Text) || !strings.HasSuffix(s.Text, "morning.") || len(s.Text) < 200 {
		t.Errorf("summary %q, want the answer cut after a sentence, near 100 tokens", s.Text)
	}
	if got := (&tokens.Counter{}).Message(tokens.O200k, plan.Inject(chat.RoleSystem, s.Text)); got != s.Tokens {
		t.Errorf("stored Tokens %d, want its count %d", s.Tokens, got)
	}
}

// A stored summary far over its share of the window (stored before
// summaries were bounded, or imported) is compacted on its own in one
// call, then the turns are folded in chunks of the full room: the job
// does not shrink its chunks to nothing and resend the summary each time.
func TestOversizedStoredSummaryIsCompactedFirst(t *testing.T) {
	const window, maxTokens = 4000, 200
	f := newFixture(t, smallWindow(64), upstreamtest.WithUnboundedSummaries())
	f.importTurns("c", 300)
	var notes []string
	for i := range 50000 {
		notes = append(notes, fmt.Sprintf("note %d", i))
	}
	huge := strings.Join(notes, "; ") // about 200,000 tokens
	k := history.Key{Tenant: "acme", Conversation: "c"}
	snap, err := f.store.Load(context.Background(), k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Commit(context.Background(), k, history.Change{Summary: &history.SummaryChange{
		Incarnation: snap.Meta.Incarnation,
		Summary:     history.Summary{Text: huge, Through: 20, Turns: 10, Tokens: 200000},
	}}); err != nil {
		t.Fatal(err)
	}
	m := f.manager()
	meta, err := m.Summarize(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.up.SummaryCalls()
	if len(calls) < 2 {
		t.Fatalf("got %d calls, want a compaction then the chunks", len(calls))
	}
	first := gjson.ParseBytes(calls[0].Messages[1]).Get("content").Str
	if !strings.HasPrefix(first, "Previous summary:\nnote 0; note 1;") || strings.Contains(first, "user: ") {
		t.Errorf("first call %.80q…, want the stored summary alone", first)
	}
	if sys := gjson.ParseBytes(calls[0].Messages[0]).Get("content").Str; !strings.Contains(sys, "grown too long") {
		t.Errorf("first call's instructions %q, want them to ask for a shorter summary", sys)
	}
	counter := &tokens.Counter{}
	for i, c := range calls {
		if sent := sentTokens(counter, c); sent > window-maxTokens {
			t.Errorf("call %d sends %d tokens, want at most %d", i, sent, window-maxTokens)
		}
	}
	// 289 turns of about 28 tokens in chunks of about 3,400: 3 chunks.
	if len(calls) > 1+4 {
		t.Errorf("got %d calls, want the compaction and about 3 chunks", len(calls))
	}
	if s := meta.Summary; s == nil || s.Turns != 299 || s.Tokens > maxTokens {
		t.Errorf("summary %+v, want 299 turns covered in at most %d tokens", s, maxTokens)
	}
}
