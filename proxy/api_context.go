package proxy

import (
	"context"
	"errors"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/summary"
)

// apiContext is the context call: plan.Make with no new messages, on the
// same store, policy and counters as the chat path, so that it answers
// exactly what the next request sends upstream before its own messages
// and instructions.
func (s *Server) apiContext(ctx context.Context, c api.Caller, k history.Key, q api.ContextQuery) (*api.Context, error) {
	pol, err := plan.PolicyFor(c.Tenant)
	if err != nil {
		return nil, err
	}
	if q.Budget > 0 {
		pol.Budget = q.Budget
	}
	p, err := plan.Make(ctx, plan.Input{Store: s.cfg.Store, Key: k, Policy: pol, Model: q.Model,
		Counter: s.counter, Fixed: fixedCounter{s}, Now: s.cfg.Now()})
	if errors.Is(err, plan.ErrNothingToSend) {
		return &api.Context{Model: q.Model, Budget: pol.Budget}, nil
	}
	if err != nil {
		return nil, err
	}
	out := &api.Context{Model: q.Model, Tokens: p.Report.Tokens, Budget: p.Budget,
		StoredTurns: p.Report.StoredTurns, IncludedTurns: p.Report.IncludedTurns}
	var first *plan.Message // the oldest stored message sent
	for i, m := range p.Messages {
		out.Messages = append(out.Messages, api.ContextMessage{Seq: m.Seq, Tokens: m.Tokens, Message: m.Raw})
		if m.Kind == plan.History && first == nil {
			first = &p.Messages[i]
		}
	}
	if sm := p.Summary; sm != nil {
		out.Summary = &api.ContextSummary{Text: sm.Text, Through: sm.Through, Turns: sm.Turns, Tokens: sm.Tokens}
		out.Dropped = append(out.Dropped, api.Dropped{Reason: "summarized", Seq: sm.Through, Tokens: sm.Tokens})
	}
	if r := p.Report; r.DroppedTurns > 0 || r.StoredTurns > r.IncludedTurns+summarisedTurns(p) {
		d := api.Dropped{Reason: "budget", Tokens: r.SavedTokens}
		if pol.MaxTurns > 0 && r.IncludedTurns >= pol.MaxTurns {
			d.Reason = "max_turns"
		}
		if first != nil { // the turns before the first one sent were left out
			d.Seq = first.Seq
		}
		out.Dropped = append(out.Dropped, d)
	}
	if n := p.Report.TruncatedToolResults; n > 0 {
		out.Dropped = append(out.Dropped, api.Dropped{Reason: "truncated", Tokens: n})
	}
	if n := p.Report.RepairedCalls; n > 0 {
		out.Dropped = append(out.Dropped, api.Dropped{Reason: "repaired", Tokens: n})
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

// apiSummaries adapts the summaries manager to the conversation API: its
// refusals become OpenAI-shaped errors.
type apiSummaries struct{ m *summary.Manager }

func (a apiSummaries) End(ctx context.Context, k history.Key) (history.Meta, error) {
	m, err := a.m.End(ctx, k)
	return m, summaryErr(err)
}

func (a apiSummaries) Summarize(ctx context.Context, k history.Key) (history.Meta, error) {
	m, err := a.m.Summarize(ctx, k)
	return m, summaryErr(err)
}

func summaryErr(err error) error {
	switch {
	case errors.Is(err, summary.ErrDisabled):
		return apierr.SummariesDisabled
	case errors.Is(err, summary.ErrNoModel):
		return apierr.NoSummaryModel
	case errors.Is(err, summary.ErrNotFound):
		return apierr.ConversationNotFound
	}
	return err
}
