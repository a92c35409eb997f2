package history

import (
	"errors"
	"fmt"

	"github.com/recallproxy/recall/internal/slicepool"
	"github.com/recallproxy/recall/wire"
)

// ErrContextLength is returned (as a *ContextLengthError) when the current
// turn alone does not fit the model's input window. The proxy answers it as
// OpenAI does: 400 context_length_exceeded.
var ErrContextLength = errors.New("history: context length exceeded")

// ContextLengthError is a current turn larger than the model's window.
type ContextLengthError struct {
	// Window is the model's context length; Messages the prompt tokens the
	// request needs; Completion the tokens it asks for the answer.
	Window, Messages, Completion int
}

func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("history: context length exceeded: the prompt needs %d tokens, the model's window is %d with %d for the answer",
		e.Messages, e.Window, e.Completion)
}

// Is makes errors.Is(err, ErrContextLength) hold.
func (e *ContextLengthError) Is(target error) bool { return target == ErrContextLength }

// Message is the error in OpenAI's own words, for the client.
func (e *ContextLengthError) Message() string {
	if e.Completion > 0 {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			e.Window, e.Messages+e.Completion, e.Messages, e.Completion)
	}
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.",
		e.Window, e.Messages)
}

// Turn is a user message and everything after it up to the next user
// message (the first turn of a window may lack its user message, and so
// may a stored turn whose user message was forgotten, see opensTurn).
type Turn struct {
	Messages []Message
	Tokens   int
}

// Seq returns the sequence number of the turn's first message.
func (t *Turn) Seq() uint64 { return t.Messages[0].Seq }

// Report says what curation did to one context.
type Report struct {
	// StoredTurns is the number of turns the conversation holds, the current
	// one included; IncludedTurns how many were sent.
	StoredTurns, IncludedTurns int
	// DroppedTurns counts turns read but not sent (turns behind the
	// cache-stable cut are not even read, and count in StoredTurns only).
	DroppedTurns int
	// OverBudget reports that the current turn alone was larger than the
	// budget: it was sent with no history (the budget bounds what Recall
	// adds, never what the client sends).
	OverBudget bool
	// TruncatedToolResults counts earlier tool results cut for the context.
	TruncatedToolResults int
	// RepairedCalls counts unanswered tool calls removed and orphan tool
	// results dropped from the sent copy.
	RepairedCalls int
	// Tokens is the estimate of the whole prompt: fixed part plus messages.
	Tokens int
	// SavedTokens is what curation kept out of the context, of what was read.
	SavedTokens int
	// Dropped lists the turns read but not sent, oldest first, as ranges
	// of sequence numbers with the reason (DroppedBudget, DroppedMaxTurns).
	// It is nil when nothing was dropped: the common request allocates
	// nothing for it. Turns the store did not even read (behind the
	// cache-stable cut, summarised, inactive) are not listed here: the
	// inspector works them out from the metadata (see package inspect).
	Dropped []Dropped
	// Cut lists the earlier tool results cut for the context, oldest
	// first; nil when none was.
	Cut []CutResult
}

// Reasons a turn was dropped, as the exchange record names them.
const (
	DroppedBudget     = "budget"     // over the token budget, or behind the cut point it moved
	DroppedMaxTurns   = "max_turns"  // over the sliding window's turn cap
	DroppedSummarized = "summarized" // covered by the summary sent instead
	DroppedSuperseded = "superseded" // replaced by a client's edit or retry
	DroppedForgotten  = "forgotten"  // forgotten (soft or hard)
)

// Dropped is a range of dropped turns: the sequence numbers of the first
// message of the first turn and of the last message of the last one.
type Dropped struct {
	From   uint64 `json:"from"`
	To     uint64 `json:"to"`
	Reason string `json:"reason"`
	// Turns is how many turns the range holds (0: not known, for ranges
	// the store never read).
	Turns int `json:"turns,omitempty"`
}

// CutResult is one tool result cut for the context: its message's
// sequence number, its text's characters before and after the cut (the
// marker left out), and the characters each of its results was cut to
// (the strategy's MaxChars), with which the inspector cuts the stored
// message again to show it as it was sent (0: not known, a record made
// before it was kept).
type CutResult struct {
	Seq         uint64 `json:"seq"`
	CharsBefore int    `json:"chars_before"`
	CharsAfter  int    `json:"chars_after"`
	MaxChars    int    `json:"max_chars,omitempty"`
}

// Window is one request's context while it is curated: older turns, then
// the current turn, which holds the new messages and is never dropped.
// Strategies narrow and rewrite it; nothing in it is written back to the
// store except Cut.
type Window struct {
	// Turns are the turns in context, oldest first; the last is current.
	Turns []Turn
	// Budget is the most prompt tokens that may be sent with history (0:
	// no limit).
	Budget int
	// Window is the model's context length and Completion the tokens the
	// request reserves for the answer (0: unknown, no limit): a current turn
	// over the budget is still sent if it fits Window-Completion.
	Window, Completion int
	// Floor, if > 0, is the most tokens the window may hold when the
	// budget alone would send no earlier turn: the newest earlier turn is
	// kept while Fixed, it and the current turn stay within Floor (the
	// model's window less the answer's reserve), so that a client whose
	// own request fills the budget does not lose its memory (DESIGN.md
	// section 5).
	Floor int
	// Fixed counts the tokens sent besides these turns: instructions,
	// summary, tool definitions and the reply priming.
	Fixed int
	// Cut is the cache-stable cut point: turns starting before it are not
	// sent. Strategies move it forward in steps; the proxy stores it.
	Cut uint64
	// Count returns the tokens of a rewritten message; strategies that
	// change a message's text use it.
	Count func(m *Message) int
	// Report accumulates what curation did.
	Report Report

	// all is the array NewWindow laid the turns out in, back to back: while
	// they still lie in it in order, Curate sends a slice of it. box holds
	// it in windowArrays once Release gives it back, turnBox the array
	// Turns began in, in turnArrays.
	all     []Message
	box     *[]Message
	turnBox *[]Turn
}

// NewWindow splits history and the new messages into turns. History
// messages carry their stored Seq; new messages must carry the Seq they will
// be stored under, so a cut point can name them. storedTurns is the
// conversation's stored turn count before this request. The window lays
// them out in an array of its own, which Release gives back.
func NewWindow(hist, fresh []Message, cut uint64, storedTurns int) *Window {
	box := windowArrays.Get(len(hist) + len(fresh))
	all := append(*box, hist...)
	all = append(all, fresh...)
	w := &Window{Cut: cut, all: all, box: box}
	turns := 1
	for i := 1; i < len(all); i++ {
		if opensTurn(&all[i-1], &all[i]) {
			turns++
		}
	}
	w.turnBox = turnArrays.Get(turns)
	w.Turns = *w.turnBox
	start := 0
	for i := 1; i <= len(all); i++ {
		if i == len(all) || opensTurn(&all[i-1], &all[i]) {
			t := Turn{Messages: all[start:i:i]}
			for j := range t.Messages {
				t.Tokens += t.Messages[j].Tokens
			}
			w.Turns = append(w.Turns, t)
			start = i
		}
	}
	read := len(w.Turns)
	// Turns behind the stored cut stay out (the store may have read them to
	// satisfy the merge); the current turn always stays.
	behind := 0
	for behind < len(w.Turns)-1 && cut > 0 && w.Turns[behind].Seq() < cut {
		behind++
	}
	if behind > 0 {
		// The cut point only moves when the budget or the turn cap drops
		// turns; those behind it stay dropped so the prompt prefix holds.
		w.noteDropped(w.Turns[:behind], DroppedBudget)
		w.Turns = w.Turns[behind:]
	}
	w.Report.DroppedTurns = read - len(w.Turns)
	w.Report.StoredTurns = storedTurns
	if len(fresh) > 0 && fresh[0].Role == wire.RoleUser {
		w.Report.StoredTurns++
	}
	return w
}

// opensTurn reports whether m, following prev, starts a turn: a user
// message does, and so does a stored message whose turn differs from the
// one before it, which is how the store numbers turns (Meta.Turns). The
// two differ only when a turn's user message was forgotten: its other
// messages are then a turn of their own, counted, sent and dropped as the
// store counts them, not merged into the turn before.
func opensTurn(prev, m *Message) bool {
	return m.Role == wire.RoleUser || m.Turn != 0 && prev.Turn != 0 && m.Turn != prev.Turn
}

// Tokens returns the window's prompt estimate: Fixed plus every turn.
func (w *Window) Tokens() int {
	n := w.Fixed
	for i := range w.Turns {
		n += w.Turns[i].Tokens
	}
	return n
}

// Drop removes the n oldest turns (never the current one) for reason (one
// of the Dropped* names) and moves the cut point to the first remaining
// turn.
func (w *Window) Drop(n int, reason string) {
	n = min(n, len(w.Turns)-1)
	if n <= 0 {
		return
	}
	for _, t := range w.Turns[:n] {
		w.Report.SavedTokens += t.Tokens
	}
	w.noteDropped(w.Turns[:n], reason)
	w.Turns = w.Turns[n:]
	w.Report.DroppedTurns += n
	if len(w.Turns) > 0 && len(w.Turns[0].Messages) > 0 {
		w.Cut = w.Turns[0].Seq()
	}
}

// Strategy is one step of curation. Strategies are small values, composed
// in the order a tenant's configuration names them.
type Strategy interface {
	Curate(w *Window) error
}

// Curate runs s over w, then repairs tool-call coherence and returns the
// messages to send, oldest first, with their token counts.
func Curate(w *Window, s Strategy) ([]Message, error) {
	if s != nil {
		if err := s.Curate(w); err != nil {
			return nil, err
		}
	}
	// The budget is an invariant, whatever the configured strategies: drop
	// what must go, and fail only when the current turn alone is too big.
	if err := w.fit(1); err != nil {
		return nil, err
	}
	if w.Budget > 0 && w.Tokens() > w.Budget {
		// Only the current turn is left (and the newest earlier one, within
		// the Floor): send it if the model takes it.
		if w.Window > 0 && w.Tokens() > w.Window-w.Completion {
			return nil, &ContextLengthError{Window: w.Window, Messages: w.Tokens(), Completion: w.Completion}
		}
		w.Report.OverBudget = true
	}
	out, repaired := Repair(w.messages(), w.Count)
	w.Report.RepairedCalls += repaired
	w.Report.IncludedTurns = len(w.Turns)
	w.Report.Tokens = w.Fixed
	for i := range out {
		w.Report.Tokens += out[i].Tokens
	}
	return out, nil
}

// fit drops the oldest turns until the window fits the budget, and when it
// has to drop, keeps dropping down to lowWater of the budget so the cut
// point holds for the next requests.
func (w *Window) fit(lowWater float64) error {
	if w.Budget <= 0 || w.Tokens() <= w.Budget {
		return nil
	}
	target := int(float64(w.Budget) * lowWater)
	total, n := w.Tokens(), 0
	for n < len(w.Turns)-1 && total > target {
		total -= w.Turns[n].Tokens
		n++
	}
	// Dropping down to the low-water mark must not drop more than it takes
	// to fit if the low-water mark is out of reach anyway.
	if total > target {
		total, n = w.Tokens(), 0
		for n < len(w.Turns)-1 && total > w.Budget {
			total -= w.Turns[n].Tokens
			n++
		}
	}
	// The newest earlier turn stays when the model's window holds it.
	if last := len(w.Turns) - 1; n == last && n > 0 && w.Floor > 0 &&
		w.Fixed+w.Turns[n-1].Tokens+w.Turns[last].Tokens <= w.Floor {
		n--
	}
	w.Drop(n, DroppedBudget)
	return nil
}

// noteDropped adds turns, oldest first and dropped for reason, to the
// report, extending the last range if it has the same reason.
func (w *Window) noteDropped(turns []Turn, reason string) {
	if len(turns) == 0 {
		return
	}
	last := turns[len(turns)-1].Messages
	d := Dropped{From: turns[0].Seq(), To: last[len(last)-1].Seq, Reason: reason, Turns: len(turns)}
	if n := len(w.Report.Dropped); n > 0 && w.Report.Dropped[n-1].Reason == reason {
		w.Report.Dropped[n-1].To, w.Report.Dropped[n-1].Turns = d.To, w.Report.Dropped[n-1].Turns+d.Turns
		return
	}
	w.Report.Dropped = append(w.Report.Dropped, d)
}

// messages returns the turns' messages, oldest first. While the turns lie
// back to back at the end of the array NewWindow laid them out in (only
// whole turns were dropped from the front, and no strategy gave one a
// copy of its own), that is a slice of it, capped so that an append
// copies; otherwise a new slice.
func (w *Window) messages() []Message {
	n := 0
	for i := range w.Turns {
		n += len(w.Turns[i].Messages)
	}
	if start := len(w.all) - n; n > 0 && start >= 0 && w.inPlace(start) {
		return w.all[start:len(w.all):len(w.all)]
	}
	out := make([]Message, 0, n)
	for i := range w.Turns {
		out = append(out, w.Turns[i].Messages...)
	}
	return out
}

// inPlace reports whether the turns' messages are w.all[start:], in order.
func (w *Window) inPlace(start int) bool {
	at := start
	for i := range w.Turns {
		msgs := w.Turns[i].Messages
		if len(msgs) == 0 {
			continue
		}
		if &msgs[0] != &w.all[at] {
			return false
		}
		at += len(msgs)
	}
	return at == len(w.all)
}

// windowArrays keeps the arrays released windows laid their messages out
// in: a 50-turn window's is some 15 KB, allocated and zeroed on every
// request otherwise; turnArrays those their Turns began in. Neither keeps
// a window over a long conversation's whole history.
var (
	windowArrays = slicepool.Pool[Message]{Max: maxPooledWindow}
	turnArrays   = slicepool.Pool[Turn]{Max: maxPooledWindow}
)

// maxPooledWindow bounds, in messages or turns, the arrays windowArrays
// and turnArrays keep.
const maxPooledWindow = 1024

// Release gives back the arrays w's messages and turns lie in, for the
// next window. Neither w nor what Curate returned for it may be used
// after: copy what must outlive it.
func (w *Window) Release() {
	box, tb := w.box, w.turnBox
	w.all, w.box, w.turnBox, w.Turns = nil, nil, nil, nil
	if box == nil {
		return // released already
	}
	turnArrays.Put(tb)
	windowArrays.Put(box)
}
