package history

import (
	"context"
	"errors"

	"github.com/recallproxy/recall/wire"
)

// ErrConflict is returned by Store.Commit when the conversation changed
// since the snapshot the change was computed from.
var ErrConflict = errors.New("history: conversation changed concurrently")

// ErrNoSpace is returned by Store.Commit when the store cannot take
// writes: its storage is (nearly) full, or it is read-only.
var ErrNoSpace = errors.New("history: insufficient storage")

// ErrUnavailable wraps the errors of a networked store that cannot be
// reached (connection refused, closed or reset, server shutting down):
// the call failed and may succeed once the store is back. A Commit that
// fails so was not acknowledged (if the connection broke during its
// COMMIT it may still have landed, as a retry will find).
var ErrUnavailable = errors.New("history: store unavailable")

// Store keeps conversations. It is written for two implementations: the
// embedded Badger store (store/badgerstore) and, later, a networked store
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
	// including inactive ones when all is true (never erased ones: their
	// records are gone), until fn returns false.
	Messages(ctx context.Context, k Key, after uint64, all bool, fn func(Message) bool) error
	// Delete erases every trace of the conversation: metadata, messages,
	// summary, search and listing entries. Readers see it gone at once
	// (or not yet), never in part; the id then starts fresh. Deleting a
	// conversation that does not exist is not an error.
	Delete(ctx context.Context, k Key) error
	// List returns a page of a tenant's conversations, newest activity
	// (Meta.UpdatedAt) first, read through an index: cost follows the
	// page, not the number of conversations. more reports whether the
	// index holds conversations past the page (with Keep, the next page
	// may come back empty).
	List(ctx context.Context, tenant string, q ListQuery) (page []Entry, more bool, err error)
	// Search ranks a tenant's active messages (one conversation's when
	// q.Conversation is set) against q.Text with BM25 (see search):
	// best first, ties newest first. The statistics are those of the scope
	// searched, counting every stored record, active or not (search.Stats).
	// The index is written in the same transaction as the messages, so it
	// never disagrees with them.
	Search(ctx context.Context, tenant string, q SearchQuery) ([]Hit, error)
	// Namespaces returns up to limit namespaces (Key.Tenant values) that
	// hold a conversation and start with prefix, in byte order, after
	// after ("" for the first page). Retention walks the namespaces of a
	// pass-through tenant (one per credential) with it; cost follows the
	// page, not the number of conversations.
	Namespaces(ctx context.Context, prefix, after string, limit int) ([]string, error)
	// ExchangeLog keeps the conversation's exchange records, which Delete
	// erases with it.
	ExchangeLog
}

// ListQuery selects a page of Store.List.
type ListQuery struct {
	// Limit is the page size (> 0).
	Limit int
	// After is the id of the last conversation of the previous page: the
	// page starts after it ("" for the first page), where it is listed
	// now. A conversation written since the previous page moved to the
	// front and is not listed again; if After itself was written since,
	// the page starts at its new place, so conversations repeat rather
	// than go missing. An After no longer stored starts from the top.
	After string
	// Oldest lists least recent activity first (retention).
	Oldest bool
	// UpdatedBefore, if > 0, lists only conversations last updated before
	// it (Unix nanoseconds).
	UpdatedBefore int64
	// Skip, if > 0, skips that many conversations first (retention's cap;
	// cost grows with Skip, reading index keys only).
	Skip int
	// Keep, if set, filters the page: only conversations it keeps count
	// toward Limit.
	Keep func(*Meta) bool
}

// Entry is one conversation of a list.
type Entry struct {
	Conversation string
	Meta         Meta
}

// SearchQuery is one Store.Search.
type SearchQuery struct {
	// Text is the query, split into terms as messages are (search.Terms).
	Text string
	// Conversation, if set, searches that conversation only.
	Conversation string
	// Limit is the most hits returned (> 0).
	Limit int
}

// Hit is one message a search found.
type Hit struct {
	Conversation string
	Message      Message
	Score        float64
}

// Leaser is implemented by stores that several processes share: it
// serialises work on one name (a summary job, a retention pass, a change
// of the conversation API) across them. A lease expires if its holder
// dies, so a killed process blocks nobody for longer than the lease. An
// exchange takes its conversation's lease with its plan's read instead
// (Query.Lease, ExchangeLease).
type Leaser interface {
	// Acquire waits until it holds the lease on name or ctx ends. The
	// holder keeps it alive until release.
	Acquire(ctx context.Context, name string) (release func(), err error)
	// TryAcquire takes the lease on name if nobody holds it: ok false
	// means another process does (background work runs once per fleet).
	TryAcquire(ctx context.Context, name string) (release func(), ok bool, err error)
}

// Kinds of lease: what a lease serialises across processes.
const (
	// LeaseConversation is held by an exchange on a conversation, from
	// its plan's read until its commit (ExchangeLease), and by a change
	// of the conversation API; the commit's version check still fences
	// it.
	LeaseConversation = "conv"
	// LeaseSummary is held by a summary job on one conversation.
	LeaseSummary = "summary"
	// LeaseRetention is held by a retention pass over one namespace.
	LeaseRetention = "retention"
)

// LeaseName is the name of the lease of kind on k, the one convention
// every Leaser user names its leases by: "<kind>/<tenant>/<conversation>",
// or "<kind>/<tenant>" for a lease on a whole namespace (k.Conversation
// empty). Ids never hold '/', so names never collide.
func LeaseName(kind string, k Key) string {
	if k.Conversation == "" {
		return kind + "/" + k.Tenant
	}
	return kind + "/" + k.Tenant + "/" + k.Conversation
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
	// Summarized raises After to the stored summary's Through (see
	// Resolve): the turns a summary covers are never read, and the store
	// learns where they end from the metadata it reads anyway, in the same
	// read.
	Summarized bool
	// Lease, if set and not held yet, is taken by the read, in its round
	// trip, by a store several processes share (ExchangeLease): the read
	// waits while another process holds it, and what it returns is read
	// under it. Other stores leave it alone.
	Lease *ExchangeLease
}

// Resolve returns q as it applies to a conversation whose metadata is m:
// with Summarized, After is at least the summary's Through. Every store
// (and the Cache) calls it once it has the metadata, before reading the
// tail.
func (q Query) Resolve(m *Meta) Query {
	if q.Summarized && m.Summary != nil && m.Summary.Through > q.After {
		q.After = m.Summary.Through
	}
	return q
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
	if n == 0 || oldest != wire.RoleUser || n < q.MinMessages {
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
	// Base, if set, is the metadata the change was computed from, as
	// loaded (its Version is Version): a store may then commit without
	// reading the stored metadata first, if the stored head (HeadOf) is
	// still Base's. Stores only read it.
	Base *Meta
	// Supersede, if set, flags every active message after a boundary as
	// superseded before Append is applied.
	Supersede *Boundary
	// Append are the messages to add, in order; Seq, Turn and CreatedAt are
	// assigned by the store.
	Append []Message
	// Cut, if > 0, becomes the metadata's cache-stable cut point.
	Cut uint64
	// Tools reports that the exchange's request carried tool definitions:
	// it sets Meta.Tools.
	Tools bool
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
	// Forget, if set, makes messages inactive (PlanForget computes it).
	// A hard forget erases their records and search entries too. Either
	// way a summary covering any of them is dropped until rebuilt, so
	// forgotten content does not live on inside it.
	Forget *Forgetting
	// Incarnation, if the change creates the conversation, becomes its
	// Meta.Incarnation; 0 draws a random one (what every caller but a
	// test comparing two stores wants).
	Incarnation uint64
	// Metadata, if set, replaces Meta.Metadata (the Conversations API's
	// metadata, a JSON object's text).
	Metadata *string
	// Import, if set, appends Append as exported: each message keeps its
	// Seq (ascending), Turn, Episode, Flags and CreatedAt. Only into an
	// empty conversation (Version 0).
	Import bool
	// Lease, if held by the store (a read took it: Query.Lease), is
	// dropped by the commit in its own transaction when it commits; a
	// commit that fails leaves it held.
	Lease *ExchangeLease
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
