package summary

import (
	"context"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

// Instructions are counted once per text and encoding, with the counter's
// answer, and the kept counts stay bounded.
func TestInstructionsCountedOncePerText(t *testing.T) {
	var counter tokens.Counter
	calls := map[string]int{}
	c := newTextCounts(func(enc tokens.Encoding, s string) int {
		calls[string(enc)+"/"+s]++
		return counter.Text(enc, s)
	}, maxInstructionCounts)
	system := systemPrompt("", true)
	for range 3 {
		if got, want := c.tokens(tokens.O200k, system), counter.Text(tokens.O200k, system); got != want {
			t.Fatalf("got %d tokens, want %d", got, want)
		}
		c.tokens(tokens.CL100k, system)
	}
	if n := calls["o200k_base/"+system]; n != 1 {
		t.Errorf("o200k: counted %d times, want once", n)
	}
	if n := calls["cl100k_base/"+system]; n != 1 {
		t.Errorf("cl100k: counted %d times, want once", n)
	}
	for i := range 3 * maxInstructionCounts {
		c.tokens(tokens.O200k, system+strconv.Itoa(i))
	}
	if n := len(c.counts); n > maxInstructionCounts {
		t.Errorf("%d counts kept, want at most %d", n, maxInstructionCounts)
	}
}

// A summary's text is counted once, though the job that makes it bounds
// it and stores its count, and the next job, which folds it into the
// next summary, checks it against summary.max_tokens and records it: the
// memo answers the repeats, with the count of the summary's message.
func TestSummaryCountedOncePerText(t *testing.T) {
	f := newFixture(t, nil)
	m := f.manager()
	var counter tokens.Counter
	calls := map[string]int{}
	m.summaries.count = func(enc tokens.Encoding, s string) int {
		calls[s]++
		return summaryCount(&counter)(enc, s)
	}
	k := history.Key{Tenant: "acme", Conversation: "c"}
	var texts []string
	for round := range 2 {
		f.importTurns("c", 8*(round+1))
		meta, err := m.Summarize(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		s := meta.Summary
		if s == nil {
			t.Fatalf("round %d: no summary", round)
		}
		if want := counter.Message(tokens.O200k, plan.Inject(chat.RoleSystem, s.Text)); s.Tokens != want {
			t.Errorf("round %d: summary of %d tokens, want %d", round, s.Tokens, want)
		}
		texts = append(texts, s.Text)
	}
	if texts[0] == texts[1] {
		t.Fatalf("both jobs made the summary %q", texts[0])
	}
	for _, s := range texts {
		if calls[s] != 1 {
			t.Errorf("summary %q counted %d times, want once", s, calls[s])
		}
	}
}
