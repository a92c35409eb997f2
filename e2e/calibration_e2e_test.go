package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/tokens"
)

// reportingTimes makes the fake upstream report factor times Recall's
// estimate of the prompt it got (its messages counted as Recall counts
// them, plus the reply priming) as its input tokens.
func reportingTimes(factor float64) upstreamtest.Option {
	counter := &tokens.Counter{}
	return upstreamtest.WithPromptTokens(func(_ string, msgs []json.RawMessage) int {
		n := tokens.ReplyPriming
		for _, m := range msgs {
			n += counter.Message(tokens.O200k, m)
		}
		return int(math.Round(float64(n) * factor))
	})
}

// Recall learns how the upstream counts its prompts against its own
// estimate: the ratio is learned from usage (1 until three samples),
// clamped at 2 when the upstream reports 10x, shown on the conversation
// and in /metrics, and applied: a conversation that fits the budget as
// estimated is curated harder once the upstream is known to count more,
// and its exchange record says so (budget, calibration, estimated and
// calibrated input).
func TestCalibrationLearnedShownAndApplied(t *testing.T) {
	const budget = 450
	for _, tc := range []struct {
		name      string
		factor    float64
		wantRatio float64
	}{
		{"upstream counts as estimated", 1, 1},
		{"upstream counts 1.5x", 1.5, 1.5},
		{"upstream counts 10x: clamped", 10, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := e2etest.New(t, e2etest.Options{
				Global:   withBudget(budget),
				Upstream: []upstreamtest.Option{reportingTimes(tc.factor)},
			})
			conv := "calibrated"
			say := func(i int) {
				t.Helper()
				h.Up.Enqueue(upstreamtest.Reply{Content: "ok"})
				text := fmt.Sprintf("turn %d: %s", i, strings.Repeat("lorem ipsum ", 40))
				h.PostDone("/v1/chat/completions", key, conv, `{"model":"gpt-4o","messages":[{"role":"user","content":"`+text+`"}]}`)
			}
			for i := 1; i <= 3; i++ {
				say(i)
			}

			var detail struct {
				Calibration *struct {
					Model   string  `json:"model"`
					Ratio   float64 `json:"ratio"`
					Samples int     `json:"samples"`
				} `json:"calibration"`
			}
			a := h.API(key, "", "GET", "/recall/v1/conversations/"+conv, "")
			a.JSON(t, &detail)
			if c := detail.Calibration; c == nil || c.Model != "gpt-4o" || c.Samples != 3 || math.Abs(c.Ratio-tc.wantRatio) > 0.03 {
				t.Fatalf("conversation's calibration: got %+v, want gpt-4o at %v over 3 samples", c, tc.wantRatio)
			}
			// What the next plans work to: the budget over the ratio learned.
			calibrated := budget
			if r := detail.Calibration.Ratio; r > 1 {
				calibrated = int(budget / r)
			}
			if got := h.Metric(`recall_calibration_ratio{model="gpt-4o",tenant="default"}`); math.Abs(got-tc.wantRatio) > 0.03 {
				t.Errorf("/metrics: got ratio %v, want %v", got, tc.wantRatio)
			}

			// count_tokens plans as the chat path does: calibrated too (asked
			// before the fourth exchange stores a cut point made calibrated).
			ct := h.Post("/v1/messages/count_tokens", key, conv, `{"model":"gpt-4o","messages":[{"role":"user","content":"`+strings.Repeat("lorem ipsum ", 40)+`"}]}`)
			var count struct {
				InputTokens int `json:"input_tokens"`
			}
			if err := json.Unmarshal([]byte(ct.Body), &count); ct.Status != 200 || err != nil || count.InputTokens == 0 {
				t.Fatalf("count_tokens: %d %s", ct.Status, ct.Body)
			}
			if want := calibrated; count.InputTokens > want {
				t.Errorf("count_tokens: got %d tokens, want at most the calibrated budget %d", count.InputTokens, want)
			}
			// So does the conversation API's context call.
			var cx struct {
				Budget int `json:"budget"`
				Tokens int `json:"tokens"`
			}
			h.API(key, "", "GET", "/recall/v1/conversations/"+conv+"/context?model=gpt-4o", "").JSON(t, &cx)
			if want := calibrated; cx.Budget != want || cx.Tokens > want {
				t.Errorf("context call: got budget %d with %d tokens, want budget %d", cx.Budget, cx.Tokens, want)
			}

			say(4)
			recs := exchanges(t, h, conv)
			if len(recs) != 4 {
				t.Fatalf("got %d records, want 4", len(recs))
			}
			before, after := recs[1], recs[0]
			if before.Calibration != 1 || before.Budget != budget {
				t.Errorf("third exchange (ratio not yet trusted): got calibration %v budget %d, want 1 and %d", before.Calibration, before.Budget, budget)
			}
			if math.Abs(after.Calibration-tc.wantRatio) > 0.03 {
				t.Errorf("fourth exchange: got calibration %v, want %v", after.Calibration, tc.wantRatio)
			}
			wantBudget := budget
			if after.Calibration > 1 {
				wantBudget = int(float64(budget) / after.Calibration)
			}
			if after.Budget != wantBudget {
				t.Errorf("fourth exchange: got budget %d, want %d (%d / %v)", after.Budget, wantBudget, budget, after.Calibration)
			}
			tk := after.Tokens
			if want := int(math.Round(float64(tk.EstimatedInput) * after.Calibration)); tk.CalibratedInput != want || tk.EstimatedInput > after.Budget {
				t.Errorf("fourth exchange: got estimated %d calibrated %d of budget %d, want calibrated %d within the budget", tk.EstimatedInput, tk.CalibratedInput, after.Budget, want)
			}
			if tk.CalibratedInput > budget {
				t.Errorf("fourth exchange: got %d tokens calibrated, want at most the tenant's budget %d", tk.CalibratedInput, budget)
			}
			sent := 0
			for _, s := range after.Included {
				sent += int(s.To - s.From + 1)
			}
			switch {
			case tc.wantRatio == 1 && sent != 6:
				t.Errorf("uncalibrated: got %d stored messages sent (%+v), want all 6: the conversation fits", sent, after.Included)
			case tc.wantRatio > 1 && (sent >= 6 || len(findDropped(after.Dropped, "budget")) == 0):
				t.Errorf("calibrated at %v: got %d stored messages sent, dropped %+v; want fewer than 6, dropped for the budget", tc.wantRatio, sent, after.Dropped)
			}
		})
	}
}
