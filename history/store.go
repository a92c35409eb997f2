package history

import (
	"context"
	"errors"
)

// ErrConflict is returned by Store.Commit when the conversation changed
// since the snapshot the change was computed from.
var ErrConflict = errors.New("history: conversation changed concurrently")

// ErrNoSpace is returned by Store.Commit when the store cannot take
// writes: its storage is (nearly) full, or it is read-only.
var ErrNoSpace = errors.New("history: insufficient storage")

// Store keeps conversations. It is written for two implementations: the
// embedded Badger store (history/badgerstore) and, later, a networked store
// shared by several proxy replicas; both namespace keys by tenant, then
// conversation, keep messages as append-only records by sequence number,
// and update the metadata record in the same atomic write.
type Store interface {
	// Load returns the conversation's metadata and the newest active
	// messages that q asks for. A conversation never written returns a zero
	// Snapshot and no error.
	Load(ctx context.Context, k Key, q Query) (Snapshot, error)
	// Commit applies c atomically: every message is appended and every flag
	// set, with the metadata, or nothing is. It fails with ErrConflict if
	// the metadata's Version is no longer c.Version.
	Commit(ctx context.Context, k Key, c Change) (Meta, error)
	// Messages calls fn for each message with Seq > after, oldest first,
	// including inactive ones when all is true, until fn returns false.
	Messages(ctx context.Context, k Key, after uint64, all bool, fn func(Message) bool) error
	// Delete erases every trace of the conversation.
	Delete(ctx context.Context, k Key) error
}

// Query says how much of a conversation's tail Load reads, newest first.
// Reading stops once every bound is met, at the start of a turn, so cost
// follows what can be sent, never the length of the stored history.
type Query struct {
	// MinMessages is the least number of active messages to read (the merge
	// needs as many as the client sent to find the overlap).
	MinMessages int
	// Tokens is the least number of tokens to read (the budget), unless the
	// history holds fewer.
	Tokens int
	// MaxTurns, if > 0, stops reading after that many whole turns once
	// MinMessages is met.
	MaxTurns int
	// FromCut stops reading at the conversation's cache-stable cut point
	// (Meta.Cut); MinMessages still reads past it.
	FromCut bool
	// After, if > 0, is a hard lower bound: no message with Seq <= After
	// is read, whatever the other bounds ask (the turns a summary covers).
	After uint64
}

// Done is the one rule of where a read of a conversation's tail, newest
// first, stops; every Store and the Cache follow it. Having read n active
// messages holding tokens tokens and turns turns, the oldest of them of
// role oldest, the read stops before the message with sequence number
// next (or, when next is an upper bound of it, before whatever message is
// next). cut is the conversation's cut point (Meta.Cut). Past the hard
// bound (After) it always stops; otherwise only on a turn boundary, once
// MinMessages are read and the budget, the cut or the turn cap is met.
func (q Query) Done(n, tokens, turns int, oldest string, next, cut uint64) bool {
	if next <= q.After {
		return true
	}
	if n == 0 || oldest != RoleUser || n < q.MinMessages {
		return false
	}
	return tokens >= q.Tokens || (q.FromCut && cut > 0 && next < cut) || (q.MaxTurns > 0 && turns >= q.MaxTurns)
}

// Snapshot is a conversation as Load read it.
type Snapshot struct {
	// Meta is the metadata record; its zero value means a new conversation.
	Meta Meta
	// Tail holds the newest active messages read, oldest first.
	Tail []Message
	// Complete reports whether Tail reaches back to the first active message.
	Complete bool
}

// Change is one atomic write to a conversation.
type Change struct {
	// Version is the metadata Version the change was computed from.
	Version uint64
	// Supersede, if set, flags every active message after a boundary as
	// superseded before Append is applied.
	Supersede *Boundary
	// Append are the messages to add, in order; Seq, Turn and CreatedAt are
	// assigned by the store.
	Append []Message
	// Cut, if > 0, becomes the metadata's cache-stable cut point.
	Cut uint64
	// Model, ResponseID and usage describe the upstream's answer.
	Model            string
	ResponseID       string
	PromptTokens     int
	CompletionTokens int
	// Now is the commit time in Unix nanoseconds (passed in: stores read no
	// clock).
	Now int64
	// Exchange, if set, marks the change as a chat exchange: the metadata
	// remembers it (Meta.Last) so that a retry of the same request can
	// replace it. Any other change forgets the last exchange.
	Exchange *ExchangeID
	// Seal, if set, closes the open episode before Append (after an idle
	// timeout, or an explicit end): the next messages open a new one. A
	// seal with nothing to append leaves the conversation ended.
	Seal bool
	// Summary, if set, lands a summary. A change that does nothing else is
	// checked against the stored summary rather than Version, and changes
	// neither Version nor UpdatedAt (see Change.Check).
	Summary *SummaryChange
}

// Boundary is the last message kept by a supersede: Seq 0 supersedes the
// whole history.
type Boundary struct {
	Seq  uint64 `json:"seq"`
	Turn uint32 `json:"turn"`
}

// ExchangeID identifies the request behind a chat exchange.
type ExchangeID struct {
	// Key is a digest of the request's Idempotency-Key header, 0 if none.
	Key uint64 `json:"key,omitempty"`
	// Hash is [HashMessages] of the client's new messages.
	Hash uint64 `json:"hash"`
}

// Exchange is the newest commit of a chat exchange, as Meta.Last keeps it.
type Exchange struct {
	ExchangeID
	// From is the first sequence number the exchange appended.
	From uint64 `json:"from"`
	// Messages is how many messages it appended, the answer included.
	Messages int `json:"messages"`
	// Before is the newest active message before From: replacing the
	// exchange supersedes everything after it.
	Before Boundary `json:"before"`
	// Meta counters before the exchange, so that a retry computes its
	// context as if the exchange had not been made.
	Turns  int `json:"turns"`
	Tokens int `json:"tokens"`
}
