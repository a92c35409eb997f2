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
	// Incarnation and Epoch are the conversation's (Meta) when the job
	// read it: the change applies only while both are unchanged, so a
	// summary made from messages since forgotten, superseded or deleted
	// (with the id perhaps reused) is discarded with ErrStale.
	Incarnation, Epoch uint64
	// Summary is the new summary.
	Summary Summary
	// PromptTokens and CompletionTokens are what the summariser spent.
	PromptTokens, CompletionTokens int
	// Episode and Title, if set, title that sealed episode (a seal's
	// compaction makes the title with the summary); the conversation's
	// title becomes the newest titled episode's.
	Episode uint32
	Title   string
}

// MaxEpisodes bounds the sealed episodes the metadata keeps (the oldest
// live on only in the summary).
const MaxEpisodes = 16

// Episode is a sealed episode of a conversation: the messages From..To,
// sealed after an idle timeout or an explicit end.
type Episode struct {
	N        uint32 `json:"n"`
	From     uint64 `json:"from"`
	To       uint64 `json:"to"`
	Title    string `json:"title,omitempty"`
	SealedAt int64  `json:"sealed_at"`
}

// seal closes the open episode at now, if it holds any message, and opens
// the next.
func (m *Meta) seal(now int64) {
	if m.EpisodeFrom == 0 || m.EpisodeFrom >= m.NextSeq {
		return // nothing in it yet
	}
	m.Episodes = append(m.Episodes, Episode{N: m.Episode, From: m.EpisodeFrom, To: m.NextSeq - 1, SealedAt: now})
	if n := len(m.Episodes); n > MaxEpisodes {
		m.Episodes = append(m.Episodes[:0:0], m.Episodes[n-MaxEpisodes:]...)
	}
	m.Episode++
	m.EpisodeFrom = m.NextSeq
}

// onlySummary reports whether c does nothing but land a summary.
func (c *Change) onlySummary() bool {
	return c.Summary != nil && c.Supersede == nil && len(c.Append) == 0 && c.Cut == 0 && c.Exchange == nil
}

// Check reports whether c applies to a conversation whose metadata is m:
// nil, ErrConflict if c was computed from another version (or imports
// into a conversation that is not empty), or, for a change that only
// lands a summary, ErrStale if the stored summary is not the one it was
// made from or the conversation is another incarnation or epoch than the
// one it was made from. A summary does not check (nor bump) the
// version: it lands between chat commits without failing them. Every
// Store calls Check before Apply.
func (c *Change) Check(m *Meta) error {
	if !c.onlySummary() {
		if m.Version != c.Version || (c.Import && m.NextSeq != 0) {
			return ErrConflict
		}
		return nil
	}
	var through uint64
	if m.Summary != nil {
		through = m.Summary.Through
	}
	if c.Summary.Incarnation != m.Incarnation || c.Summary.Epoch != m.Epoch {
		return ErrStale
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
	if c.Title != "" {
		for i := range m.Episodes {
			if m.Episodes[i].N == c.Episode {
				m.Episodes[i].Title = c.Title
			}
		}
		if newest := m.newestTitled(); newest != "" {
			m.Title = newest
		}
	}
	m.Summaries++
	m.SummaryPromptTokens += int64(c.PromptTokens)
	m.SummaryCompletionTokens += int64(c.CompletionTokens)
}

// newestTitled returns the title of the newest titled episode, or "".
func (m *Meta) newestTitled() string {
	for i := len(m.Episodes) - 1; i >= 0; i-- {
		if m.Episodes[i].Title != "" {
			return m.Episodes[i].Title
		}
	}
	return ""
}
