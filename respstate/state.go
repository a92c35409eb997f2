// Package respstate is the state Recall keeps for OpenAI's Responses and
// Conversations APIs on its own store (DESIGN.md section 11): the stored
// responses (GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items), the Conversations API
// (/v1/conversations and below), the items a stored message is shown as,
// Recall's response ids, which name where a response is stored, and its
// compactions' contents, which name the summary they stand for.
//
// proxy mounts it: it routes a request here, reads its body,
// authenticates the caller and renders an error in OpenAI's shape;
// State.Serve does the rest. The Responses exchanges in proxy chain on
// what it stores through State.Load and State.Fork, mint ids with Ref and
// read compactions with ParseCompaction.
package respstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/tokens"
)

// Config configures a State. Zero fields take the documented defaults.
type Config struct {
	// Store keeps the conversations (required).
	Store history.Store
	// Lock takes a conversation's lock in this process (convlock.Table's
	// Acquire), the lock the exchanges on it take, so that a change
	// through these routes and the exchanges wait for one another
	// (required).
	Lock func(ctx context.Context, k history.Key) (release func(), err error)
	// Leaser, if set, is taken besides Lock: the conversation's lease,
	// which the exchanges on it hold across replicas (see lock). Default:
	// the Store, if it is a history.Leaser.
	Leaser history.Leaser
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Counter counts the tokens of the items the Conversations API
	// stores. Default: a new Counter.
	Counter *tokens.Counter
	// Heavy, if set, admits a heavy call of a namespace (the
	// conversation API's limiter, api.Handler.EnterHeavy): a page of the
	// Conversations API's items runs under it. Default: none.
	Heavy func(ctx context.Context, ns string) (leave func(), err error)
	// Logger receives the failures that are not the request's.
	// Default: discarded.
	Logger *slog.Logger
}

// State serves the Responses and Conversations APIs' state. Its methods
// may be called concurrently.
type State struct {
	cfg Config
}

// New returns a State for cfg.
func New(cfg Config) (*State, error) {
	if cfg.Store == nil || cfg.Lock == nil {
		return nil, errors.New("respstate: config needs Store and Lock")
	}
	if l, ok := cfg.Store.(history.Leaser); ok && cfg.Leaser == nil {
		cfg.Leaser = l
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Counter == nil {
		cfg.Counter = &tokens.Counter{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &State{cfg: cfg}, nil
}

// Caller is what the routes need of who a request is, as the server
// that mounts them authenticated it.
type Caller struct {
	// Namespace holds the caller's conversations in the store
	// (auth.Caller.Namespace).
	Namespace string
	// StoredToolResultChars is the length a tool result the
	// Conversations API stores is cut to; 0 keeps it whole
	// (config.History.StoredToolResultChars).
	StoredToolResultChars int
	// Encoding is the tiktoken encoding the tenant counts with
	// (config.History.Encoding).
	Encoding string
}

var (
	prefixResponses     = []byte("/v1/responses/")
	pathConversations   = []byte("/v1/conversations")
	prefixConversations = []byte("/v1/conversations/")
)

// Serve answers a request to a state route: path (below any /c/{id}
// prefix, which names nothing here) is /v1/responses/ and below, or
// /v1/conversations and below; body is the request's body, read whole.
// ctx bounds the store work. The answer is written to rc; an error is
// returned unwritten (an *apierr.Error, or one wrapping it) for the
// caller to render in OpenAI's shape, with Allow's header on a 405.
// body must not be changed until Serve returns; nothing of it or of rc
// is kept after.
func (st *State) Serve(ctx context.Context, rc *fasthttp.RequestCtx, c Caller, path, body []byte) error {
	sc := &call{st: st, rc: rc, c: c, ctx: ctx, body: body}
	switch {
	case bytes.HasPrefix(path, prefixResponses):
		return sc.responses(strings.Split(string(path[len(prefixResponses):]), "/"))
	case bytes.Equal(path, pathConversations):
		return sc.conversations(nil)
	case bytes.HasPrefix(path, prefixConversations):
		return sc.conversations(strings.Split(string(path[len(prefixConversations):]), "/"))
	}
	return apierr.NotFound
}

// Allow is the Allow header of a 405 on path, a state route.
func Allow(path []byte) string {
	switch {
	case bytes.HasPrefix(path, prefixResponses) && bytes.HasSuffix(path, []byte("/input_items")):
		return "GET"
	case bytes.HasPrefix(path, prefixResponses):
		return "GET, DELETE"
	case bytes.Equal(path, pathConversations):
		return "POST"
	case bytes.HasSuffix(path, []byte("/items")):
		return "GET, POST"
	case bytes.Count(path, []byte("/")) == 5: // /v1/conversations/{id}/items/{item_id}
		return "GET, DELETE"
	}
	return "GET, POST, DELETE"
}

// call is one request to a state route.
type call struct {
	st   *State
	rc   *fasthttp.RequestCtx
	c    Caller
	ctx  context.Context
	body []byte
}

// method returns the request's method.
func (sc *call) method() string { return string(sc.rc.Method()) }

// reply answers v as JSON with status.
func (sc *call) reply(status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sc.replyRaw(status, b)
}

// replyRaw answers body, JSON already, with status.
func (sc *call) replyRaw(status int, body []byte) error {
	sc.rc.SetStatusCode(status)
	sc.rc.SetContentType("application/json")
	sc.rc.SetBody(body)
	return nil
}

// key is conversation id's key in the caller's namespace; the id comes
// from the path, escaped or not.
func (sc *call) key(id string) (history.Key, error) {
	if dec, err := url.PathUnescape(id); err == nil {
		id = dec
	}
	if !history.ValidID(id) {
		return history.Key{}, apierr.BadConversationID
	}
	return history.Key{Tenant: sc.c.Namespace, Conversation: id}, nil
}

// meta returns k's metadata; a conversation never written (or deleted)
// is apierr.ConversationNotFound.
func (sc *call) meta(k history.Key) (history.Meta, error) {
	snap, err := sc.st.cfg.Store.Load(sc.ctx, k, history.Query{After: ^uint64(0)})
	if err != nil {
		return history.Meta{}, StoreReadErr(err)
	}
	if snap.Meta.NextSeq == 0 {
		return history.Meta{}, apierr.ConversationNotFound
	}
	return snap.Meta, nil
}

// lockedMeta takes k's lock and reads its metadata, as meta does; the
// caller releases the lock, which is released already when it returns an
// error.
func (sc *call) lockedMeta(k history.Key) (history.Meta, func(), error) {
	release, err := sc.lock(k)
	if err != nil {
		return history.Meta{}, nil, err
	}
	m, err := sc.meta(k)
	if err != nil {
		release()
		return history.Meta{}, nil, err
	}
	return m, release, nil
}

// lock takes k's lock in this process, as an exchange does, so that a
// change through these routes and the exchanges on the conversation wait
// for one another; and, across replicas, k's lease, which every exchange
// on it holds from its plan's read to its commit (history.ExchangeLease).
// A store of one process holds it at once, and so does the only process
// writing a shared one.
func (sc *call) lock(k history.Key) (release func(), err error) {
	cfg := &sc.st.cfg
	unlock, err := cfg.Lock(sc.ctx, k)
	if err != nil {
		return nil, apierr.Busy
	}
	if cfg.Leaser == nil {
		return unlock, nil
	}
	lease, err := cfg.Leaser.Acquire(sc.ctx, history.LeaseName(history.LeaseConversation, k))
	if err != nil {
		unlock()
		if errors.Is(err, history.ErrUnavailable) {
			return nil, apierr.StoreUnavailable
		}
		return nil, apierr.Busy
	}
	return func() { lease(); unlock() }, nil
}

// messages returns k's active messages with from <= Seq <= to, oldest
// first, copied.
func (sc *call) messages(k history.Key, from, to uint64) ([]history.Message, error) {
	return sc.collect(k, from-min(from, 1), func(m *history.Message) bool { return m.Seq <= to })
}

// collect returns k's active messages after seq after, oldest first,
// copied, up to the first one keep refuses.
func (sc *call) collect(k history.Key, after uint64, keep func(m *history.Message) bool) ([]history.Message, error) {
	var out []history.Message
	err := sc.st.cfg.Store.Messages(sc.ctx, k, after, false, func(m history.Message) bool {
		if !keep(&m) {
			return false
		}
		m.Raw = bytes.Clone(m.Raw)
		out = append(out, m)
		return true
	})
	if err != nil {
		return nil, StoreReadErr(err)
	}
	return out, nil
}

// hardForget erases seqs (ascending) of k, whose metadata is m, with
// every message a tool group ties to them (a call and its results go
// together, as the conversation API's forget closes them), through
// history.PlanForget as that forget does. The caller holds k's lock.
func (sc *call) hardForget(k history.Key, m history.Meta, seqs []uint64) error {
	for attempt := 0; ; attempt++ {
		active, err := sc.messages(k, 1, ^uint64(0))
		if err != nil {
			return err
		}
		pick := closeGroups(active, seqs)
		plan := history.PlanForget(active, pick, true)
		if plan == nil {
			return nil
		}
		_, err = sc.st.cfg.Store.Commit(sc.ctx, k, history.Change{Version: m.Version, Forget: plan, Now: sc.st.cfg.Now().UnixNano()})
		if errors.Is(err, history.ErrConflict) && attempt < 2 {
			if m, err = sc.meta(k); err != nil {
				return err
			}
			continue // another process wrote between the read and the commit
		}
		if err != nil {
			return StoreWriteErr(err)
		}
		return nil
	}
}

// closeGroups returns seqs, those of them still active, with the
// messages history.Forget ties to each (position:N selects a message and
// closes its tool group), ascending.
func closeGroups(active []history.Message, seqs []uint64) []uint64 {
	pick := map[uint64]bool{}
	for i, m := range active {
		if !slices.Contains(seqs, m.Seq) {
			continue
		}
		group, _ := history.Forget(active, "position:"+strconv.Itoa(i+1))
		for _, s := range group {
			pick[s] = true
		}
	}
	out := make([]uint64, 0, len(pick))
	for _, m := range active {
		if pick[m.Seq] {
			out = append(out, m.Seq)
		}
	}
	return out
}
