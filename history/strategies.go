package history

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Passthrough sends every turn it is given (the budget invariant of Curate
// still applies).
type Passthrough struct{}

// Curate does nothing.
func (Passthrough) Curate(*Window) error { return nil }

// SlidingWindow keeps at most MaxTurns turns, the current one included.
// When it must drop, it drops down to LowWater of MaxTurns so the cut point
// holds for the next requests instead of sliding by one turn per request.
type SlidingWindow struct {
	MaxTurns int     // 0: no cap
	LowWater float64 // in (0, 1]; 0 means 1 (slide by one turn)
}

// Curate drops the oldest turns over the cap.
func (s SlidingWindow) Curate(w *Window) error {
	if s.MaxTurns <= 0 || len(w.Turns) <= s.MaxTurns {
		return nil
	}
	keep := s.MaxTurns
	if s.LowWater > 0 && s.LowWater < 1 {
		keep = max(1, int(float64(s.MaxTurns)*s.LowWater))
	}
	w.Drop(len(w.Turns)-keep, DroppedMaxTurns)
	return nil
}

// TokenBudget fits the window to its budget by dropping whole turns, oldest
// first. When it must drop, it drops down to LowWater of the budget, so
// the cut point (and with it the prompt prefix providers cache) holds until
// the budget forces the next step.
type TokenBudget struct {
	LowWater float64 // in (0, 1]; 0 means 1 (drop just enough)
}

// Curate drops the oldest turns until the window fits.
func (s TokenBudget) Curate(w *Window) error {
	lw := s.LowWater
	if lw <= 0 || lw > 1 {
		lw = 1
	}
	return w.fit(lw)
}

// ToolResultTruncator cuts the text of tool results in turns before the
// current one to MaxChars characters, with a visible marker. The current
// turn's results are never cut.
type ToolResultTruncator struct {
	MaxChars int // 0: do not cut
}

// Curate cuts long tool results of earlier turns.
func (s ToolResultTruncator) Curate(w *Window) error {
	if s.MaxChars <= 0 {
		return nil
	}
	for ti := 0; ti < len(w.Turns)-1; ti++ {
		t := &w.Turns[ti]
		copied := false
		for mi := range t.Messages {
			m := &t.Messages[mi]
			if !answers(m) {
				continue
			}
			orig := m.Raw
			raw, ok := m.Codec().CutResults(m.Raw, s.MaxChars, ContextMarker)
			if !ok {
				continue
			}
			if !copied { // never write through to the caller's slice
				t.Messages = append([]Message(nil), t.Messages...)
				m = &t.Messages[mi]
				copied = true
			}
			old := m.Tokens
			if w.Count != nil {
				m.Raw = raw
				m.Tokens = w.Count(m)
			} else {
				// Scale by the share of the original kept, plus the marker.
				m.Tokens = min(old, old*s.MaxChars/max(1, utf8.RuneCount(m.Raw))+16)
				m.Raw = raw
			}
			t.Tokens += m.Tokens - old
			w.Report.SavedTokens += old - m.Tokens
			w.Report.TruncatedToolResults++
			w.Report.Cut = append(w.Report.Cut, cutResult(m, orig, s.MaxChars))
		}
	}
	return nil
}

// cutResult says what cutting the results of orig (m before the cut) to
// max characters did: it cuts orig again, counting, which costs a second
// cut of the messages actually cut and nothing on the path that cuts none.
func cutResult(m *Message, orig []byte, max int) CutResult {
	c := CutResult{Seq: m.Seq, MaxChars: max}
	m.Codec().CutResults(orig, max, func(kept, total int) string {
		c.CharsBefore += total
		c.CharsAfter += kept
		return ""
	})
	return c
}

// ContextMarker is the marker appended to tool results cut for the
// context (ToolResultTruncator; wire.Codec.CutResults).
func ContextMarker(kept, total int) string {
	return fmt.Sprintf("[truncated for context: %d of %d characters]", kept, total)
}

// StorageMarker is the marker appended to tool results stored cut
// (wire.Codec.CutResults).
func StorageMarker(int, int) string { return "[truncated for storage]" }

// Composed runs strategies in order.
type Composed []Strategy

// Curate runs each strategy, stopping at the first error.
func (c Composed) Curate(w *Window) error {
	for _, s := range c {
		if err := s.Curate(w); err != nil {
			return err
		}
	}
	return nil
}

// Strategy names accepted in configuration.
const (
	NamePassthrough         = "passthrough"
	NameSlidingWindow       = "sliding_window"
	NameTokenBudget         = "token_budget"
	NameToolResultTruncator = "tool_result_truncator"
)

// StrategyNames are the names Build accepts: config validates a tenant's
// history.strategies against them.
var StrategyNames = []string{NamePassthrough, NameSlidingWindow, NameTokenBudget, NameToolResultTruncator}

// Policy holds the tenant settings strategies are built from.
type Policy struct {
	Strategies         []string
	MaxTurns           int
	LowWater           float64
	OldToolResultChars int
}

// Build returns the strategy a tenant's policy names, in its order.
func Build(p Policy) (Strategy, error) {
	out := make(Composed, 0, len(p.Strategies))
	for _, name := range p.Strategies {
		switch name {
		case NamePassthrough:
			out = append(out, Passthrough{})
		case NameSlidingWindow:
			out = append(out, SlidingWindow{MaxTurns: p.MaxTurns, LowWater: p.LowWater})
		case NameTokenBudget:
			out = append(out, TokenBudget{LowWater: p.LowWater})
		case NameToolResultTruncator:
			out = append(out, ToolResultTruncator{MaxChars: p.OldToolResultChars})
		default:
			return nil, fmt.Errorf("history: unknown strategy %s", strconv.Quote(name))
		}
	}
	return out, nil
}
