package proxy

// contextTokens is the planned context's size in tokens (0 before a plan,
// or without one).
func (x *exchange) contextTokens() int {
	if x.dec == nil {
		return 0
	}
	return x.dec.Report.Tokens
}

// releasePlan gives back the plan's message array (plan.Plan.Release)
// once the exchange is done: logged, recorded and inspected (x.done), its
// relay ended. A commit still running past the exchange's deadline reads
// the decision's other fields, never its messages.
func (x *exchange) releasePlan() {
	if x.dec != nil && x.dec.Plan != nil {
		x.dec.Release()
	}
}
