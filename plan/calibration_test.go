package plan_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// A calibration ratio above 1 (the upstream counts more than Recall
// estimates) makes the plan work to the budget divided by it, so that
// fewer stored turns go; below 1 the configured budget is kept.
func TestRatioCorrectsTheBudget(t *testing.T) {
	st := summaryStore(t, 40, 1, "The user asked.") // 40 turns; the summary is left out (NoSummary)
	var base *plan.Plan
	for _, tc := range []struct {
		name       string
		ratio      float64
		wantBudget int
	}{
		{"none", 0, 600},
		{"one", 1, 600},
		{"upstream counts 1.5x", 1.5, 400},
		{"upstream counts less", 0.5, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.Make(context.Background(), plan.Input{
				Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: "gpt-4o", Now: time.Now(),
				Policy: plan.Policy{Mode: history.Auto, Budget: 600, NoSummary: true},
				New:    []history.Message{msg(`{"role":"user","content":"and now?"}`)},
				Ratio:  tc.ratio,
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.Budget != tc.wantBudget {
				t.Errorf("got budget %d, want %d", p.Budget, tc.wantBudget)
			}
			if p.Report.Tokens > p.Budget {
				t.Errorf("got %d tokens planned, want at most the budget %d", p.Report.Tokens, p.Budget)
			}
			if want := max(tc.ratio, 0); want > 0 && p.Ratio != want || want == 0 && p.Ratio != 1 {
				t.Errorf("got plan ratio %v, want %v (1 for none)", p.Ratio, tc.ratio)
			}
			if base == nil {
				base = p
				return
			}
			sent, baseSent := p.Report.IncludedTurns, base.Report.IncludedTurns
			if tc.ratio > 1 && sent >= baseSent {
				t.Errorf("got %d turns sent, want fewer than the %d sent uncalibrated", sent, baseSent)
			}
			if tc.ratio <= 1 && sent != baseSent {
				t.Errorf("got %d turns sent, want the %d sent uncalibrated", sent, baseSent)
			}
		})
	}
}
