package api

import (
	"context"
	"errors"
	"time"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// PlanContext is the context call over store: plan.Make with no new
// messages, with the caller's tenant policy, so that it answers exactly
// what the next chat request sends upstream before its own messages and
// instructions (the chat path counts with the same counter; nil: a new
// one). now is the clock (idle timeouts).
func PlanContext(store history.Store, counter *tokens.Counter, now func() time.Time) ContextFunc {
	return planContextFunc(store, counter, now, nil)
}

// planContextFunc is PlanContext with the chat path's calibration (nil:
// none).
func planContextFunc(store history.Store, counter *tokens.Counter, now func() time.Time, cal Calibration) ContextFunc {
	return func(ctx context.Context, c auth.Caller, k history.Key, q ContextQuery) (*Context, error) {
		ratio, window := 1.0, 0
		if cal != nil {
			ratio, window = cal.Learned(c.Tenant.ID, q.Model)
		}
		return planContext(ctx, store, counter, now(), c, k, q, ratio, window)
	}
}

func planContext(ctx context.Context, store history.Store, counter *tokens.Counter, now time.Time,
	c auth.Caller, k history.Key, q ContextQuery, ratio float64, window int) (*Context, error) {
	pol, err := plan.PolicyFor(c.Tenant)
	if err != nil {
		return nil, err
	}
	if q.Budget > 0 {
		pol.Budget = q.Budget
	}
	input := plan.Input{Store: store, Key: k, Policy: pol, Model: q.Model, Now: now, Ratio: ratio, Window: window}
	if counter != nil {
		input.Counter = counter
	}
	p, err := plan.Make(ctx, input)
	if errors.Is(err, plan.ErrNothingToSend) {
		return &Context{Model: q.Model, Budget: pol.Budget}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &Context{Model: q.Model, Tokens: p.Report.Tokens, Budget: p.Budget,
		StoredTurns: p.Report.StoredTurns, IncludedTurns: p.Report.IncludedTurns}
	var first *plan.Message // the oldest stored message sent
	for i, m := range p.Messages {
		out.Messages = append(out.Messages, ContextMessage{Seq: m.Seq, Tokens: m.Tokens,
			Protocol: m.Protocol.String(), Role: m.Role, Text: string(wire.For(m.Protocol).Text(nil, m.Raw)), Message: m.Raw})
		if m.Kind == plan.History && first == nil {
			first = &p.Messages[i]
		}
	}
	if sm := p.Summary; sm != nil {
		out.Summary = &ContextSummary{Text: sm.Text, Through: sm.Through, Turns: sm.Turns, Tokens: sm.Tokens}
		out.Dropped = append(out.Dropped, Dropped{Reason: "summarized", Seq: sm.Through, Tokens: sm.Tokens})
	}
	if r := p.Report; r.DroppedTurns > 0 || r.StoredTurns > r.IncludedTurns+summarisedTurns(p) {
		d := Dropped{Reason: "budget", Tokens: r.SavedTokens}
		if pol.MaxTurns > 0 && r.IncludedTurns >= pol.MaxTurns {
			d.Reason = "max_turns"
		}
		if first != nil { // the turns before the first one sent were left out
			d.Seq = first.Seq
		}
		out.Dropped = append(out.Dropped, d)
	}
	if n := p.Report.TruncatedToolResults; n > 0 {
		out.Dropped = append(out.Dropped, Dropped{Reason: "truncated", Tokens: n})
	}
	if n := p.Report.RepairedCalls; n > 0 {
		out.Dropped = append(out.Dropped, Dropped{Reason: "repaired", Tokens: n})
	}
	return out, nil
}

// summarisedTurns is the number of turns p's summary stands for.
func summarisedTurns(p *plan.Plan) int {
	if p.Summary == nil {
		return 0
	}
	return p.Summary.Turns
}
