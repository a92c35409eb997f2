package proxy

// contextTokens is the planned context's size in tokens (0 before a plan,
// or without one).
func (x *exchange) contextTokens() int {
	if x.dec == nil {
		return 0
	}
	return x.dec.Report.Tokens
}
