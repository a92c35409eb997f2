package plan_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// budget_tokens 0 (the default) is half the model's input window: the
// table's for a known model of any family, 128k for an unknown one, the
// one the upstream reported when Recall learned it; calibration divides it
// as it divides an explicit budget, which keeps its meaning.
func TestDefaultBudgetFollowsTheModel(t *testing.T) {
	st := summaryStore(t, 4, 1, "The user asked.")
	for _, tc := range []struct {
		name    string
		model   string
		budget  int
		window  int // learned
		ratio   float64
		want    int
		maxToks int
	}{
		{name: "gpt-4o", model: "gpt-4o", want: 64000},
		{name: "claude", model: "claude-sonnet-4-5-20250929", want: 100000},
		{name: "gemini", model: "gemini-2.5-pro", want: 524288},
		{name: "unknown", model: "my-local-llama", want: 64000},
		{name: "learned window", model: "my-local-llama", window: 8192, want: 4096},
		{name: "learned window wins over the table", model: "gpt-4o", window: 32000, want: 16000},
		{name: "calibrated", model: "claude-sonnet-4-5", ratio: 1.25, want: 80000},
		{name: "the answer's reserve", model: "gpt-4", maxToks: 6000, want: 2192},
		{name: "explicit", model: "gpt-4o", budget: 16000, want: 16000},
		{name: "explicit over a small window", model: "gpt-4", budget: 16000, want: 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.Make(context.Background(), plan.Input{
				Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: tc.model, MaxTokens: tc.maxToks, Now: time.Now(),
				Policy: plan.Policy{Mode: history.Auto, Budget: tc.budget},
				New:    []history.Message{user("and now?")},
				Ratio:  tc.ratio, Window: tc.window,
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.Budget != tc.want {
				t.Errorf("got budget %d, want %d", p.Budget, tc.want)
			}
		})
	}
}

// A client whose own request (instructions, tools, the new message) fills
// the budget still gets the summary and the newest earlier turn, whole,
// while the model's window holds them: a coding agent's 20k tokens of
// its own never empty its memory. Past the window, the turn goes too.
func TestTheClientsOwnRequestNeverEmptiesMemory(t *testing.T) {
	st := summaryStore(t, 6, 4, "The user's name is Ada.")
	agentPrompt := strings.Repeat("You are a coding agent. Use the tools well. ", 1500) // about 15k tokens
	for _, tc := range []struct {
		name      string
		model     string
		budget    int
		ratio     float64
		wantTurns int // earlier turns sent besides the current one
		summary   bool
	}{
		{name: "the old default budget, calibrated", model: "claude-sonnet-4-5", budget: 16000, ratio: 1.38, wantTurns: 1, summary: true},
		{name: "a budget under the agent's own prompt", model: "gpt-4o", budget: 2000, wantTurns: 1, summary: true},
		{name: "a window the prompt fills", model: "gpt-4-32k", budget: 2000, wantTurns: 1, summary: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.Make(context.Background(), plan.Input{
				Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: tc.model, Now: time.Now(),
				Policy:       plan.Policy{Mode: history.Auto, Budget: tc.budget, SummaryMaxTokens: 1000},
				Instructions: []history.Message{msg(`{"role":"system","content":"` + agentPrompt + `"}`)},
				New:          []history.Message{user("what is my name?")},
				Ratio:        tc.ratio,
			})
			if err != nil {
				t.Fatal(err)
			}
			var hist, summaries int
			for _, m := range p.Messages {
				switch m.Kind {
				case plan.History:
					hist++
				case plan.SummaryMessage:
					summaries++
					if !strings.Contains(string(m.Raw), "Ada") {
						t.Errorf("the summary went cut: %s", m.Raw)
					}
				}
			}
			if got := p.Report.IncludedTurns - 1; got != tc.wantTurns {
				t.Errorf("got %d earlier turns sent (%d messages), want %d", got, hist, tc.wantTurns)
			}
			if (summaries == 1) != tc.summary {
				t.Errorf("got %d summaries sent, want %v", summaries, tc.summary)
			}
			if !p.Report.OverBudget {
				t.Errorf("the report does not say the prompt passed the budget (%d of %d)", p.Report.Tokens, p.Budget)
			}
		})
	}
	// A window that holds the agent's prompt and the current turn but not
	// the newest earlier turn besides: only the turn the client sent goes.
	mk := func(window int) *plan.Plan {
		p, err := plan.Make(context.Background(), plan.Input{
			Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: "my-model", Now: time.Now(),
			Policy:       plan.Policy{Mode: history.Auto, Budget: 2000, NoSummary: true},
			Instructions: []history.Message{msg(`{"role":"system","content":"` + agentPrompt + `"}`)},
			New:          []history.Message{user("what is my name?")},
			Window:       window,
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	whole := mk(1 << 20)
	if whole.Report.IncludedTurns != 2 {
		t.Fatalf("got %d turns sent in a large window, want 2", whole.Report.IncludedTurns)
	}
	if p := mk(whole.Report.Tokens - 1); p.Report.IncludedTurns != 1 {
		t.Errorf("got %d turns sent past the window, want the current one only", p.Report.IncludedTurns)
	}
}
