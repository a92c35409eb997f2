// Package plan works out what the next request of a conversation, in any
// protocol, sends upstream: it loads the stored conversation, merges the
// client's new messages with it, injects the running summary and curates
// the result to the tenant's budget. It is a pure function of the store's
// state and its input: it writes nothing.
//
// Two callers share it, so that they can never disagree:
//
//   - the request path of every protocol (proxy), which sends the plan's
//     messages upstream and then commits what Plan says a commit needs
//     (Version, Supersede, Cut, Fresh, Seal);
//   - the conversation API's context call
//     (GET /recall/v1/conversations/{id}/context?model=&budget=), which calls
//     Make with no new messages (Input.New empty) and answers Plan.Messages
//     and Plan.Report: exactly what the next request would send, minus that
//     request's own new messages.
package plan

import (
	"context"
	"errors"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// ErrStore wraps a failure to read the conversation.
var ErrStore = errors.New("plan: read conversation")

// SideError is returned when the request is a side call of the
// conversation (package thread): nothing of the conversation goes with it
// and nothing of it is recorded.
type SideError struct{ Reason string }

func (e *SideError) Error() string { return "plan: a side call (" + e.Reason + ")" }

// ErrNothingToSend is returned when neither instructions nor messages are
// left to send (an upstream refuses an empty messages array).
var ErrNothingToSend = errors.New("plan: nothing to send")

// SummaryPrefix starts the injected summary message's text.
const SummaryPrefix = "Summary of the earlier conversation:\n"

// Kind says where a planned message comes from.
type Kind uint8

// Kinds of planned messages, in the order they are sent.
const (
	// Instruction is one of the client's leading system/developer messages.
	Instruction Kind = iota
	// SummaryMessage is the injected summary.
	SummaryMessage
	// History is a stored message, sent without the client's old cache
	// hints (chat.WithoutCacheHints).
	History
	// New is one of the request's new messages.
	New
)

// Counter counts tokens; *tokens.Counter implements it.
type Counter interface {
	Message(enc tokens.Encoding, raw []byte) int
	Tools(enc tokens.Encoding, raw []byte) int
}

var _ Counter = (*tokens.Counter)(nil)

// Policy is what a tenant's configuration says about the context.
type Policy struct {
	// Mode is the merge mode.
	Mode history.Mode
	// Budget is the most prompt tokens sent (history.budget_tokens); 0:
	// half the model's input window (Plan.Budget says what it came to).
	Budget int
	// MaxTurns caps the turns read (0: no cap).
	MaxTurns int
	// Encoding overrides the model's tiktoken encoding ("": by model).
	Encoding tokens.Encoding
	// ModelWindows overrides built-in model windows.
	ModelWindows map[string]int
	// StoredToolResultChars cuts long tool results when stored (0: whole).
	StoredToolResultChars int
	// Strategy curates the window (nil: budget only).
	Strategy history.Strategy
	// IdleTimeout, if > 0, seals the open episode when the conversation
	// was silent this long before the request.
	IdleTimeout time.Duration
	// NoSummary leaves the stored summary out (summary.enabled: false):
	// the context is built from the stored turns alone.
	NoSummary bool
	// SummaryMaxTokens (summary.max_tokens) bounds a stored summary that
	// has to be cut to fit the budget (0: cut to the room left).
	SummaryMaxTokens int
}

// minSummaryTokens is the least room a cut summary is sent in: less would
// carry a few words of it, noise rather than memory.
const minSummaryTokens = 32

// Input is one planned request.
type Input struct {
	Store  history.Store
	Key    history.Key
	Policy Policy
	// Model and MaxTokens are the request's model and answer reserve.
	Model     string
	MaxTokens int
	// Instructions are the request's instructions (Role, Raw and Protocol
	// set; chat completions' leading system/developer messages),
	// sent first every time, never stored. Tools is the raw "tools" value.
	Instructions []history.Message
	Tools        []byte
	// New are the client's other messages (Role, Raw and Hash set), merged
	// with the stored history. Empty for the context call.
	New []history.Message
	// Retry says how the request may repeat the last exchange.
	Retry history.Retry
	// Counter counts messages; Fixed, if set, counts instructions, tools
	// and the summary (the proxy caches those by hash). Default Counter.
	Counter Counter
	Fixed   Counter
	// Now is the request's time (idle timeout).
	Now time.Time
	// Loaded, if set, is called once the conversation is read and merged
	// with the new messages, before the summary and curation (a trace
	// times the two apart).
	Loaded func()
	// Ratio is how the upstream counts this model's prompts against
	// Recall's estimate (package calibrate; 0: as 1). Above 1 the plan
	// works to the budget divided by it, so that the upstream's count,
	// not only the estimate, stays within the budget; below 1 the budget
	// is kept (Recall never plans past what the tenant configured).
	Ratio float64
	// Thread, if set, is the request as package thread reads it: Make
	// fails with a *SideError when the conversation makes it a side call
	// (thread.After). Nil for the context call, which plans the main
	// thread.
	Thread *thread.Request
	// Window is the model's input window as the upstream told it (a
	// context_length_exceeded answer, learned by package calibrate; 0:
	// none): it stands before Policy.ModelWindows and the built-in table.
	Window int
	// Lease, if set, is the exchange's lease on the conversation: the
	// load takes it, on a store several processes share, in the same
	// round trip (history.Query.Lease), so that the plan is read under
	// it. The caller releases it, or its commit drops it.
	Lease *history.ExchangeLease
}

// Message is one message of the plan.
type Message struct {
	Kind Kind
	Role string
	// Protocol is the wire protocol Raw is in (the summary's is chat
	// completions). Raw is read-only: it may be the request's, the
	// store's, or the summary's message that plans of the conversation
	// share.
	Protocol wire.Protocol
	Raw      []byte
	Tokens   int
	// Seq is the stored sequence number (History), the one it will be
	// stored under (New), or 0.
	Seq uint64
}

// Plan is what a request sends and what its commit needs.
type Plan struct {
	// Messages are sent in order: instructions, the summary, the kept
	// turns, the new messages.
	Messages []Message
	// Report says what curation did (Tokens: the whole prompt estimate).
	Report history.Report
	// Encoding and Budget are the ones used (Budget in Recall's estimate,
	// calibrated: see Input.Ratio); Ratio is Input.Ratio (1 if 0).
	Encoding tokens.Encoding
	Budget   int
	Ratio    float64
	// Tools are the tokens of Input.Tools, the tool definitions sent: a
	// part of Report.Tokens that no message holds.
	Tools int
	// Meta is the conversation's metadata as loaded (before a replaced
	// retry, if Replaced).
	Meta history.Meta
	// Summary is the injected summary, nil if none.
	Summary *history.Summary
	// SummaryCut reports that the stored summary did not fit the budget
	// beside the instructions and the current turn and was sent cut
	// (within Policy.SummaryMaxTokens); SummaryOmitted that not even a cut
	// of it fitted, and it was left out (Summary is then nil).
	SummaryCut, SummaryOmitted bool
	// Version, Supersede and Cut go into the commit's Change (Cut 0:
	// unchanged); Replaced reports that the request repeats the last
	// exchange, whose turn it replaces.
	Version   uint64
	Supersede *history.Boundary
	Cut       uint64
	Replaced  bool
	// Seal reports that the conversation was idle past the timeout: the
	// commit seals the open episode (Change.Seal).
	Seal bool
	// Fresh are the new messages in their stored form (Seq assigned, long
	// tool results cut, Raw copied). When none of the request's messages
	// was stored before, the first carries history.Opening: the commit
	// remembers where the client's context began (history.Meta.Session).
	Fresh []history.Message
	// ExchangeHash is history.HashMessages of the new messages.
	ExchangeHash uint64
	// Pending is the number of turns the summary does not cover once this
	// request's turn is stored; Fits reports whether every one of them was
	// sent (false: the budget forced turns out).
	Pending int
	Fits    bool
	// box holds the array Messages was laid out in, until Release gives
	// it back.
	box *[]Message
}

// opensWith reports whether w's oldest turn begins with the stored
// message seq.
func opensWith(w *history.Window, seq uint64) bool {
	return len(w.Turns) > 0 && len(w.Turns[0].Messages) > 0 && w.Turns[0].Messages[0].Seq == seq
}

// modelWindow is model's input window: the one the upstream stated
// (learned, > 0), else the tenant's or the table's (tokens.Window).
func modelWindow(model string, windows map[string]int, learned int) (int, bool) {
	if learned > 0 {
		return learned, true
	}
	return tokens.Window(model, windows)
}

// DefaultBudget is the budget that budget_tokens 0 stands for with
// model: half its input window (modelWindow; tokens.UnknownWindow for a
// model nothing knows), before calibration and the answer's reserve.
func DefaultBudget(model string, windows map[string]int, learned int) int {
	w, known := modelWindow(model, windows, learned)
	if !known {
		w = tokens.UnknownWindow
	}
	return w / 2
}

// Count counts a message of any protocol: a chat-completions one as the
// counter does, another through its chat-completions rendition (its
// canonical model translated), plus a quarter of the bytes of the parts
// only its own provider reads (encrypted reasoning, signed thinking),
// which the upstream bills as input too. A protocol whose codec is a
// selfCounter counts the same from its own bytes when c is a
// *tokens.Counter. Through a *tokens.Cache, a message of another
// protocol is counted so once per content (instructions repeat on every
// request), not rendered as chat completions to look its count up.
func Count(c Counter, enc tokens.Encoding, p wire.Protocol, raw []byte) int {
	if p == wire.ChatCompletions {
		return c.Message(enc, raw)
	}
	if cc, ok := c.(*tokens.Cache); ok {
		return cc.Memo(enc, raw, tokens.KindOther+uint64(p), func(tc *tokens.Counter) int { return Count(tc, enc, p, raw) })
	}
	if tc, ok := c.(*tokens.Counter); ok {
		if sc, ok := wire.For(p).(selfCounter); ok {
			if n, ok := sc.Tokens(tc, enc, raw); ok {
				return n
			}
		}
	}
	return countAsChat(c, enc, p, raw)
}

// selfCounter is implemented by a codec that counts its messages as
// countAsChat does, without decoding them and writing them as chat
// completions. ok is false for a message it leaves to countAsChat.
type selfCounter interface {
	Tokens(c *tokens.Counter, enc tokens.Encoding, raw []byte) (n int, ok bool)
}

// countAsChat is Count for a message of protocol p (not chat
// completions) through its chat-completions rendition.
func countAsChat(c Counter, enc tokens.Encoding, p wire.Protocol, raw []byte) int {
	m, err := wire.For(p).Decode(raw)
	if err != nil {
		return len(raw)/4 + tokens.MessageOverhead
	}
	n, opaque := 0, 0
	for _, part := range m.Parts {
		if part.Kind == wire.Opaque {
			opaque += len(part.Raw)
		}
	}
	msgs, _ := chat.Codec{}.Encode(nil, []wire.Message{m})
	for _, r := range msgs {
		n += c.Message(enc, r)
	}
	if len(msgs) == 0 {
		n = tokens.MessageOverhead
	}
	return n + opaque/4
}

// idle reports whether m's open episode holds messages and was left
// silent for at least timeout before now.
func idle(m *history.Meta, timeout time.Duration, now time.Time) bool {
	if m.Version == 0 || m.Status == history.StatusEnded || m.UpdatedAt == 0 {
		return false
	}
	if m.EpisodeFrom != 0 && m.EpisodeFrom >= m.NextSeq {
		return false // the open episode is empty
	}
	return now.Sub(time.Unix(0, m.UpdatedAt)) >= timeout
}

// Status returns m's status at now: the stored one, or StatusIdle when an
// active conversation has been silent for idleTimeout (> 0). Idle is
// derived, never stored.
func Status(m *history.Meta, idleTimeout time.Duration, now time.Time) history.Status {
	if idleTimeout > 0 && m.Status != history.StatusEnded && m.UpdatedAt > 0 && now.Sub(time.Unix(0, m.UpdatedAt)) >= idleTimeout {
		return history.StatusIdle
	}
	return m.Status
}

// merge is history.MergeRetry for a snapshot whose tail may stop at the
// summary's Through (after > 0). A client that resends from the
// conversation's first message then sends more messages than the tail
// holds: its messages are aligned with the tail where the summarised ones
// end, or else (an agent restarted with the same opening message resends
// its own process's messages, which began after earlier processes' turns)
// where the whole tail last occurs among them. Failing both, they are
// merged against the head of the conversation, never against a chance
// overlap with the short tail; only if that finds no edit (no shared
// assistant message) are they merged with the tail as loaded.
func merge(mode history.Mode, in []history.Message, snap history.Snapshot, after uint64, head history.HeadFunc, r history.Retry) (history.Merged, bool, error) {
	tail := snap.Tail
	if after == 0 || mode != history.Auto || len(tail) >= len(in) || len(in) == 0 || in[0].Hash != snap.Meta.FirstHash {
		return history.MergeRetry(mode, in, snap, head, r)
	}
	if len(tail) > 0 && (snap.Meta.Last == nil || !r.Possible()) {
		// The tail reaches back to Through (the read stopped there): the
		// active messages before it are the summarised ones.
		at := -1
		if k := snap.Meta.Messages - len(tail); k >= 0 && k+len(tail) <= len(in) && holds(in, k, tail) {
			at = k
		}
		for j := len(in) - len(tail); at < 0 && j >= 0; j-- {
			if holds(in, j, tail) {
				at = j
			}
		}
		if at >= 0 {
			m := history.Merged{History: tail, New: in[at+len(tail):]}
			if at > 0 {
				// The request opens with the summarised messages: its
				// first may be the conversation's preamble, sent anyway.
				pre, err := history.RepeatedPreamble(in, snap, head)
				if err != nil {
					return history.Merged{}, false, err
				}
				m.Preamble = pre
			}
			return m, false, nil
		}
	}
	head = onceHead(head)
	short := snap
	short.Tail, short.Complete = nil, false
	m, replaced, err := history.MergeRetry(mode, in, short, head, r)
	if err != nil || replaced || m.Supersede != nil {
		return m, replaced, err
	}
	return history.MergeRetry(mode, in, snap, head, r)
}

// holds reports whether in holds msgs at position j, comparing hashes.
func holds(in []history.Message, j int, msgs []history.Message) bool {
	for i, m := range msgs {
		if in[j+i].Hash != m.Hash {
			return false
		}
	}
	return true
}

// onceHead returns head remembering its last answer, so that merging the
// same messages twice reads the conversation's head once.
func onceHead(head history.HeadFunc) history.HeadFunc {
	n := -1
	var msgs []history.Message
	return func(want int) ([]history.Message, error) {
		if want == n {
			return msgs, nil
		}
		got, err := head(want)
		if err != nil {
			return nil, err
		}
		n, msgs = want, got
		return got, nil
	}
}

// headFunc returns the merge's reader of a conversation's first active
// messages after seq after.
func headFunc(ctx context.Context, st history.Store, k history.Key, after uint64) history.HeadFunc {
	return func(n int) ([]history.Message, error) {
		var head []history.Message
		err := st.Messages(ctx, k, after, false, func(m history.Message) bool {
			head = append(head, m)
			return len(head) < n
		})
		return head, err
	}
}

// PolicyFor returns the policy of a tenant's configuration, merging in the
// tenant's default mode. The conversation API builds its context call's
// policy with it, as the proxy does, so both plan alike.
func PolicyFor(t *config.Tenant) (Policy, error) {
	h := t.History
	mode, err := history.ParseMode(h.Mode)
	if err != nil {
		return Policy{}, err
	}
	strategy, err := history.Build(history.Policy{
		Strategies:         h.Strategies,
		MaxTurns:           h.MaxTurns,
		LowWater:           h.LowWater,
		OldToolResultChars: h.OldToolResultChars,
	})
	if err != nil {
		return Policy{}, err
	}
	return Policy{
		Mode:                  mode,
		Budget:                h.BudgetTokens,
		MaxTurns:              h.MaxTurns,
		Encoding:              tokens.Encoding(h.Encoding),
		ModelWindows:          h.ModelWindows,
		StoredToolResultChars: h.StoredToolResultChars,
		Strategy:              strategy,
		IdleTimeout:           time.Duration(h.IdleTimeout),
		NoSummary:             !t.Summary.Enabled,
		SummaryMaxTokens:      t.Summary.MaxTokens,
	}, nil
}
