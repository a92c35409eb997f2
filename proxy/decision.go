package proxy

import (
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
)

// decide makes x's decision (see pipeline.Decision) from its plan p,
// merged in mode from the client's new messages in.
func (x *exchange) decide(p *plan.Plan, mode history.Mode, in []history.Message) *pipeline.Decision {
	return pipeline.NewDecision(pipeline.Decision{Plan: p, Store: x.s.cfg.Store, Key: x.key, Mode: mode, Retry: x.retry,
		Pinned: x.pinned, Tools: x.thread != nil && x.thread.Tools}, in)
}

// contextTokens is the planned context's size in tokens (0 before a plan,
// or without one).
func (x *exchange) contextTokens() int {
	if x.dec == nil {
		return 0
	}
	return x.dec.Report.Tokens
}
