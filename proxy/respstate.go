package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// The Responses API's state, kept by Recall (DESIGN section 11): which
// conversation a request continues, the ids of its answers, and the
// stored responses they name (see respid.go for the ids).

// resolveResponses finds the conversation of a Responses request: conv
// (the header or the path prefix), else the body's conversation, else the
// conversation of previous_response_id; two of them naming different
// conversations is a 400 naming the later parameter. A
// previous_response_id older than its conversation's latest response
// continues a fork of it (see fork). With nothing named, store true
// records the exchange in a new conversation of Recall's (conv_…), so
// that chaining by previous_response_id needs no header; store false is
// a plain call.
func resolveResponses(x *exchange, req *wire.Request, conv string) (string, error) {
	named := conv
	if req.Conversation != "" {
		if !history.ValidID(req.Conversation) {
			return "", apierr.BadConversationID
		}
		if named != "" && named != req.Conversation {
			return "", apierr.ConversationConflict("conversation")
		}
		named = req.Conversation
	}
	if req.PreviousResponseID != "" {
		return x.chained(req.PreviousResponseID, named)
	}
	if named == "" && req.Store {
		return newConversationID(), nil
	}
	return named, nil
}

// chained resolves a request chained by previous_response_id id (named:
// the conversation the request names otherwise, if any). Whether it
// continues the response's conversation or a fork is decided under the
// conversation's lock, and its lease where replicas share the store:
// of requests chained on one response at once, the first continues and
// the others, finding the response no longer the latest once the first
// committed, fork. A request that continues keeps both for its exchange
// (x.held, which prepare takes over).
func (x *exchange) chained(id, named string) (string, error) {
	ref, ok := parseResponseID(id)
	if !ok {
		return "", apierr.PreviousResponseNotFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.c.timeout())
	defer cancel()
	release, leased, err := x.s.hold(ctx, history.Key{Tenant: x.c.Namespace, Conversation: ref.Conversation})
	if err != nil {
		return "", err
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	r, err := x.s.loadResponse(ctx, x.c.Namespace, id)
	if err != nil {
		return "", err
	}
	if r == nil {
		return "", apierr.PreviousResponseNotFound
	}
	if named != "" && named != r.ref.Conversation {
		return "", apierr.ConversationConflict("previous_response_id")
	}
	if !r.latest {
		return x.s.fork(ctx, x.c.Namespace, r)
	}
	x.held, x.leased, release = release, leased, nil
	return r.ref.Conversation, nil
}

// hold takes k's lock in this process and, where replicas share the
// store (Config.Leaser), its lease, as a pinned exchange's prepare does;
// release frees both.
func (s *Server) hold(ctx context.Context, k history.Key) (release func(), leased bool, err error) {
	unlock, err := s.cfg.Locks.Acquire(ctx, k)
	if err != nil {
		return nil, false, apierr.Busy
	}
	if s.cfg.Leaser == nil {
		return unlock, false, nil
	}
	lease, err := s.cfg.Leaser.Acquire(ctx, history.LeaseName(history.LeaseConversation, k))
	if err != nil {
		unlock()
		if errors.Is(err, history.ErrUnavailable) {
			return nil, false, apierr.StoreUnavailable
		}
		return nil, false, apierr.Busy
	}
	return func() { lease(); unlock() }, true, nil
}

// dropHeld releases the lock resolve held for an exchange that does not
// prepare (a side call, history off, a request refused before its plan).
func (x *exchange) dropHeld() {
	if x.held != nil {
		x.held()
		x.held, x.leased = nil, false
	}
}

// nameResponse gives a Responses answer Recall's id before it is made
// (its stream names it in its first event). A recorded answer's id names
// where the commit will store it (responseRef): the conversation's
// incarnation, drawn here for a conversation this exchange creates, and
// the sequence number its first message gets, after the request's new
// messages. The exchange is pinned to them: a commit that would land
// elsewhere fails rather than leave the id naming other messages.
//
// The answer's "store" says whether Recall stores it, whatever the request
// asked: a store:false request that continues a stored response is stored
// with its conversation, and says so.
func nameResponse(x *exchange, req *wire.Request) {
	req.Created = x.start.Unix()
	req.Store = x.record && x.plan != nil
	if !req.Store {
		// Stored nowhere: an id that names nothing.
		req.ResponseID = "resp_" + newConversationID()[len("conv_"):]
		return
	}
	m := &x.plan.Meta
	inc := m.Incarnation
	if m.NextSeq == 0 {
		inc = newIncarnation()
		x.incarnation = inc
	}
	x.pinned = true
	req.ResponseID = responseRef{Conversation: x.key.Conversation, Incarnation: inc,
		Seq: max(m.NextSeq, 1) + uint64(len(x.fresh)), Input: len(x.fresh)}.ID()
}

// storedResponse is a response as the store holds it.
type storedResponse struct {
	ref  responseRef
	key  history.Key
	meta history.Meta
	// answer are the answer's messages: from ref.Seq up to the next
	// message that is not the model's.
	answer []history.Message
	// latest reports that no active message follows the answer: a
	// request naming it continues its conversation rather than a fork.
	latest bool
}

// loadResponse returns the stored response id names in namespace ns, or
// nil when there is none: an id Recall did not mint, a conversation that
// does not exist in ns, another incarnation of it, or an answer no
// longer active (forgotten, erased, superseded). Errors are the store's.
func (s *Server) loadResponse(ctx context.Context, ns, id string) (*storedResponse, error) {
	ref, ok := parseResponseID(id)
	if !ok {
		return nil, nil
	}
	r := &storedResponse{ref: ref, key: history.Key{Tenant: ns, Conversation: ref.Conversation}}
	snap, err := s.cfg.Store.Load(ctx, r.key, history.Query{After: ^uint64(0)}) // the metadata alone
	if err != nil {
		return nil, storeReadErr(err)
	}
	r.meta = snap.Meta
	if r.meta.NextSeq <= ref.Seq || r.meta.Incarnation != ref.Incarnation {
		return nil, nil
	}
	r.latest = true
	err = s.cfg.Store.Messages(ctx, r.key, ref.Seq-1, false, func(m history.Message) bool {
		if m.Role != wire.RoleAssistant || (len(r.answer) == 0 && m.Seq != ref.Seq) {
			r.latest = false
			return false
		}
		m.Raw = bytes.Clone(m.Raw)
		r.answer = append(r.answer, m)
		return true
	})
	if err != nil {
		return nil, storeReadErr(err)
	}
	if len(r.answer) == 0 {
		return nil, nil
	}
	return r, nil
}

// fork copies r's conversation up to and including r's answer into a new
// conversation, whose id it returns: a request naming an older response
// than the latest continues there, and the original, untouched, is still
// continued by its own latest response. The copy is the active messages,
// as stored, in one commit; the original's summary is not copied (the
// fork's own compaction makes one when its history calls for it). If the
// request then fails, the fork stays, holding the history up to r.
func (s *Server) fork(ctx context.Context, ns string, r *storedResponse) (string, error) {
	end := r.answer[len(r.answer)-1].Seq
	var copies []history.Message
	err := s.cfg.Store.Messages(ctx, r.key, 0, false, func(m history.Message) bool {
		if m.Seq > end {
			return false
		}
		copies = append(copies, history.Message{Role: m.Role, Protocol: m.Protocol, Raw: bytes.Clone(m.Raw),
			Hash: m.Hash, Tokens: m.Tokens})
		return true
	})
	if err != nil {
		return "", storeReadErr(err)
	}
	id := newConversationID()
	if _, err := s.cfg.Store.Commit(ctx, history.Key{Tenant: ns, Conversation: id},
		history.Change{Append: copies, Now: s.cfg.Now().UnixNano()}); err != nil {
		return "", storeWriteErr(fmt.Errorf("proxy: fork %s: %w", r.ref.Conversation, err))
	}
	return id, nil
}

// storeReadErr is a failed store read as the client is told it.
func storeReadErr(err error) error {
	if errors.Is(err, history.ErrUnavailable) {
		return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
	}
	return fmt.Errorf("%w: %w", apierr.StoreReadFailed, err)
}

// storeWriteErr is a failed store write as the client is told it.
func storeWriteErr(err error) error {
	switch {
	case errors.Is(err, history.ErrNoSpace):
		return fmt.Errorf("%w: %w", apierr.NoSpace, err)
	case errors.Is(err, history.ErrUnavailable):
		return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
	case errors.Is(err, history.ErrConflict):
		return fmt.Errorf("%w: %w", apierr.Changed, err)
	}
	return fmt.Errorf("%w: %w", apierr.CommitFailed, err)
}
