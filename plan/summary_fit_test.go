package plan_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
)

func TestFitSummaryCutsAtTheLastBoundaryThatFits(t *testing.T) {
	counter := &tokens.Counter{}
	for _, tc := range []struct {
		name, text string
		limit      int
		// suffix is what a cut text ends with ("": no cut expected when
		// whole, or any ending).
		suffix string
		whole  bool
	}{
		{name: "fits whole", text: "The user likes tea. They live in Oslo.", limit: 100, whole: true},
		{name: "sentences", text: strings.Repeat("The user likes tea. ", 500), limit: 60, suffix: "tea."},
		{name: "lines", text: strings.Repeat("- a decision was made\n", 500), limit: 60, suffix: "made"},
		{name: "questions", text: strings.Repeat("Is it done? ", 500), limit: 60, suffix: "done?"},
		{name: "cjk", text: strings.Repeat("用户喜欢喝茶。", 500), limit: 60, suffix: "。"},
		{name: "words only", text: strings.Repeat("word ", 2000), limit: 60, suffix: "word"},
		{name: "one long token run", text: strings.Repeat("xyzzy", 4000), limit: 60},
		{name: "megabytes", text: strings.Repeat("A fact about the order. ", 200000), limit: 1000, suffix: "order."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := plan.FitSummary(counter, tokens.O200k, chat.RoleSystem, tc.text, tc.limit)
			if want := counter.Message(tokens.O200k, plan.Inject(chat.RoleSystem, got)); n != want {
				t.Errorf("got count %d, want its count %d", n, want)
			}
			if n > tc.limit {
				t.Errorf("got %d tokens, want at most %d", n, tc.limit)
			}
			if tc.whole {
				if got != tc.text {
					t.Errorf("got %q, want the text whole", got)
				}
				return
			}
			if got == "" || !strings.HasPrefix(tc.text, got) || !strings.HasSuffix(got, tc.suffix) {
				t.Errorf("got %q, want a prefix of the text ending in %q", got, tc.suffix)
			}
			if n < tc.limit*2/3 {
				t.Errorf("got %d tokens, want close to the limit %d", n, tc.limit)
			}
		})
	}
	if got, n := plan.FitSummary(counter, tokens.O200k, chat.RoleSystem, "some text", 3); got != "" || n != 0 {
		t.Errorf("under the empty message's count: got %q, %d, want \"\", 0", got, n)
	}
}

// summaryStore is a Badger store holding conversation c: turns of user
// and assistant text, then a stored summary of text covering the first
// covered turns (written straight through the store, as an old or
// imported one would be).
func summaryStore(t *testing.T, turns, covered int, text string) history.Store {
	t.Helper()
	st := diskStore(t)
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	var msgs []history.Message
	for range turns {
		msgs = append(msgs, msg(`{"role":"user","content":"a question"}`), msg(`{"role":"assistant","content":"an answer"}`))
	}
	for i := range msgs {
		msgs[i].Tokens = (&tokens.Counter{}).Message(tokens.O200k, msgs[i].Raw)
	}
	meta, err := st.Commit(ctx, k, history.Change{Append: msgs})
	if err != nil {
		t.Fatal(err)
	}
	sc := &history.SummaryChange{Incarnation: meta.Incarnation, Summary: history.Summary{Text: text, Through: uint64(2 * covered), Turns: covered, Tokens: 1}}
	if _, err := st.Commit(ctx, k, history.Change{Version: meta.Version, Summary: sc}); err != nil {
		t.Fatal(err)
	}
	return st
}

// A stored summary that does not fit beside the instructions and the
// current turn is sent cut (within summary.max_tokens), or left out when
// no useful part of it fits; one that fits is sent whole: an oversized
// summary never makes its conversation's requests a 400
// context_length_exceeded. When the client's own request fills the
// budget, the room is the model's window less the answer's reserve
// (DESIGN.md section 5): the client's request is never why memory goes.
func TestOversizedSummaryIsCutOrLeftOut(t *testing.T) {
	huge := strings.Repeat("The user likes green tea in the morning. ", 100000) // about 900,000 tokens
	small := "The user likes green tea."
	for _, tc := range []struct {
		name          string
		text          string
		budget, max   int
		newText       string
		model         string // "": gpt-4o
		leave         int    // > 0: the answer's reserve leaves this room under the window
		cut, omitted  bool
		summaryTokens int  // at most (0: whole)
		over          bool // the prompt may pass the budget (within the window)
	}{
		{name: "fits", text: small, budget: 16000, max: 1000, newText: "hi"},
		{name: "huge cut to max_tokens", text: huge, budget: 16000, max: 1000, newText: "hi", cut: true, summaryTokens: 1000},
		{name: "the client fills the budget: cut to max_tokens", text: huge, budget: 600, max: 1000, newText: strings.Repeat("word ", 400), cut: true, summaryTokens: 1000, over: true},
		{name: "the client fills the budget: sent whole", text: small, budget: 300, max: 1000, newText: strings.Repeat("word ", 400), over: true},
		{name: "the window leaves room: cut to it", text: huge, budget: 420, max: 1000, newText: strings.Repeat("word ", 400), model: "gpt-4", leave: 200, cut: true, summaryTokens: 200, over: true},
		{name: "the window leaves no room: left out", text: small, budget: 300, max: 1000, newText: strings.Repeat("word ", 400), model: "gpt-4", leave: 10, omitted: true, over: true},
		{name: "context call: cut to max_tokens", text: huge, budget: 16000, max: 1000, cut: true, summaryTokens: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := summaryStore(t, 6, 4, tc.text)
			var news []history.Message // none: the context call
			if tc.newText != "" {
				news = append(news, msg(`{"role":"user","content":"`+tc.newText+`"}`))
			}
			model, reserve := "gpt-4o", 0
			if tc.model != "" {
				model = tc.model
			}
			if tc.leave > 0 {
				window, _ := tokens.Window(model, nil)
				current := (&tokens.Counter{}).Message(tokens.For(model, ""), news[0].Raw)
				reserve = window - tokens.ReplyPriming - current - tc.leave
			}
			p, err := plan.Make(context.Background(), plan.Input{
				Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: model, MaxTokens: reserve, Now: time.Now(),
				Policy: plan.Policy{Mode: history.Auto, Budget: tc.budget, SummaryMaxTokens: tc.max},
				New:    news,
			})
			if err != nil {
				t.Fatalf("got %v, want the request planned", err)
			}
			if p.SummaryCut != tc.cut || p.SummaryOmitted != tc.omitted {
				t.Errorf("got cut %v omitted %v, want %v %v", p.SummaryCut, p.SummaryOmitted, tc.cut, tc.omitted)
			}
			var sm *plan.Message
			for i, m := range p.Messages {
				if m.Kind == plan.SummaryMessage {
					sm = &p.Messages[i]
				}
			}
			switch {
			case tc.omitted:
				if sm != nil || p.Summary != nil {
					t.Errorf("a summary of %d tokens was sent, want it left out", sm.Tokens)
				}
			case sm == nil:
				t.Fatal("no summary sent")
			case tc.cut && (sm.Tokens > tc.summaryTokens || sm.Tokens < tc.summaryTokens/2):
				t.Errorf("got a summary of %d tokens, want it cut to about %d", sm.Tokens, tc.summaryTokens)
			case !tc.cut && !strings.Contains(string(sm.Raw), tc.text):
				t.Errorf("got summary %s, want it whole", sm.Raw)
			}
			if !tc.over && p.Report.Tokens > tc.budget {
				t.Errorf("got a prompt of %d tokens, want it within the budget %d", p.Report.Tokens, tc.budget)
			}
		})
	}
}
