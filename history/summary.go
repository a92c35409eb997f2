package history

import "errors"

// ErrStale is returned by Store.Commit for a summary made from a state the
// conversation has left: another summary landed since. The result is
// discarded, never merged.
var ErrStale = errors.New("history: summary made from a stale state")

// Summary is the running summary of a conversation's oldest turns: it
// stands in for every message up to Through, which is never sent verbatim
// again.
type Summary struct {
	// Text is the summary as injected after the client's instructions.
	Text string `json:"text"`
	// Through is the last sequence number it covers.
	Through uint64 `json:"through"`
	// Turns is how many turns it covers; Tokens its count as injected.
	Turns  int `json:"turns"`
	Tokens int `json:"tokens"`
	// Model made it; At is when it landed, in Unix nanoseconds.
	Model string `json:"model,omitempty"`
	At    int64  `json:"at"`
}

// SummaryChange lands a summary (Change.Summary).
type SummaryChange struct {
	// Base is the Through of the stored summary the new one was made from,
	// 0 for none: the change applies only while that is still the stored
	// summary (compare-and-set on covered-through), and fails with ErrStale
	// otherwise.
	Base uint64
	// Summary is the new summary.
	Summary Summary
	// PromptTokens and CompletionTokens are what the summariser spent.
	PromptTokens, CompletionTokens int
}

// onlySummary reports whether c does nothing but land a summary.
func (c *Change) onlySummary() bool {
	return c.Summary != nil && c.Supersede == nil && len(c.Append) == 0 && c.Cut == 0 && c.Exchange == nil
}

// Check reports whether c applies to a conversation whose metadata is m:
// nil, ErrConflict if c was computed from another version, or, for a
// change that only lands a summary, ErrStale if the stored summary is not
// the one it was made from. A summary does not check (nor bump) the
// version: it lands between chat commits without failing them. Every
// Store calls Check before Apply.
func (c *Change) Check(m *Meta) error {
	if !c.onlySummary() {
		if m.Version != c.Version {
			return ErrConflict
		}
		return nil
	}
	var through uint64
	if m.Summary != nil {
		through = m.Summary.Through
	}
	if c.Summary.Base != through || c.Summary.Summary.Through <= through || c.Summary.Summary.Through >= max(m.NextSeq, 1) {
		return ErrStale
	}
	return nil
}

// landSummary applies c.Summary to m.
func landSummary(m *Meta, c *SummaryChange) {
	s := c.Summary
	m.Summary = &s
	m.Summaries++
	m.SummaryPromptTokens += int64(c.PromptTokens)
	m.SummaryCompletionTokens += int64(c.CompletionTokens)
}
