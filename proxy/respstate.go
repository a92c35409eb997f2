package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/responses"
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
	if named != "" && named != r.ref.Conversation && forkRoot(r.ref.Conversation) != named {
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
	x.pinned, x.respReq = true, req
	req.ResponseID = responseRef{Conversation: x.key.Conversation, Incarnation: inc,
		Seq: max(m.NextSeq, 1) + uint64(len(x.fresh)), Input: len(x.fresh)}.ID()
}

// responseOf is the Response object a, the answer of a stored Responses
// request, is returned as, its output an empty array: its turn keeps it
// (history.Message.Response) for GET /v1/responses/{id}. nil for any
// other exchange.
func (x *exchange) responseOf(a *wire.Answer) []byte {
	if x.respReq == nil {
		return nil
	}
	b, err := sjson.SetRawBytes(responses.AppendResponse(nil, x.respReq, a), "output", []byte("[]"))
	if err != nil {
		return nil
	}
	return b
}

// storedResponse is a response as the store holds it.
type storedResponse struct {
	ref  responseRef
	key  history.Key
	meta history.Meta
	// answer are the answer's messages as the client got them (see
	// visible): from ref.Seq up to the next message that is neither the
	// model's nor Recall's own.
	answer []history.Message
	// response is the Response object POST returned, output left empty
	// (history.Message.Response); nil for a turn stored without it.
	response []byte
	// end is the sequence number of the turn's last message: the answer,
	// or a result of Recall's history tools after it.
	end uint64
	// latest reports that no active message follows the turn: a request
	// naming it continues its conversation rather than a fork.
	latest bool
}

// loadResponse returns the stored response id names in namespace ns, or
// nil when there is none: an id Recall did not mint, a conversation that
// does not exist in ns, another incarnation of it, or an answer no
// longer active (forgotten, erased, superseded).
//
// The rounds of Recall's history tools (messages flagged
// history.Internal: its calls, and their results) are part of the turn
// but not of the answer: they are skipped wherever they stand, before
// the answer or after it. Errors are the store's.
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
	var turn []history.Message
	answered := false // a result of Recall's followed the answer
	// The turn's input, and the message right before it (seq from-1,
	// when active): they must be the input the id counts (inputMatches).
	from := ref.Seq - uint64(ref.Input)
	var before, input []history.Message
	err = s.cfg.Store.Messages(ctx, r.key, max(from, 2)-2, false, func(m history.Message) bool {
		switch {
		case m.Seq < from:
			before = append(before[:0], history.Message{Seq: m.Seq, CreatedAt: m.CreatedAt})
			return true
		case m.Seq < ref.Seq:
			input = append(input, history.Message{Seq: m.Seq, CreatedAt: m.CreatedAt})
			return true
		}
		internal := m.Flags&history.Internal != 0
		if len(turn) == 0 && (m.Seq != ref.Seq || m.Role != wire.RoleAssistant) ||
			!internal && (m.Role != wire.RoleAssistant || answered) {
			r.latest = false
			return false
		}
		if internal && m.Role != wire.RoleAssistant && slices.ContainsFunc(turn, isAnswer) {
			answered = true
		}
		m.Raw = bytes.Clone(m.Raw)
		if len(turn) == 0 {
			r.response = bytes.Clone(m.Response)
		}
		m.Response = nil
		turn = append(turn, m)
		r.end = m.Seq
		return true
	})
	if err != nil {
		return nil, storeReadErr(err)
	}
	if r.answer = visible(turn); len(r.answer) == 0 || !inputMatches(before, input, turn[0]) {
		return nil, nil
	}
	return r, nil
}

// inputMatches reports whether input, the active messages an id counts
// as its turn's input, and before, the message right before them (if
// active), are what the turn stored: the input and the answer are one
// commit (every message of it has the commit's CreatedAt) and the
// message before is another's. One response then has one id: a count
// too large takes in an earlier turn's messages, one too small leaves
// out a message of the same commit (ids are checked against the store,
// never trusted).
func inputMatches(before, input []history.Message, answer history.Message) bool {
	for _, m := range input {
		if !m.CreatedAt.Equal(answer.CreatedAt) {
			return false
		}
	}
	return len(before) == 0 || !before[0].CreatedAt.Equal(answer.CreatedAt)
}

// isAnswer reports whether m is a message of the model's the client got.
func isAnswer(m history.Message) bool {
	return m.Role == wire.RoleAssistant && m.Flags&history.Internal == 0
}

// visible returns msgs (consecutive messages of one conversation) as the
// client holds them: without the calls and results of Recall's history
// tools (history.Internal), and an answer that called Recall's tools and
// the client's (history.Mixed) with the client's calls only. Recall's
// calls are those its own results among msgs answer.
func visible(msgs []history.Message) []history.Message {
	var mine map[string]bool
	var ids []string
	for _, m := range msgs {
		if m.Flags&history.Internal == 0 {
			continue
		}
		for _, id := range m.Codec().Results(ids[:0], m.Raw) {
			if mine == nil {
				mine = map[string]bool{}
			}
			mine[id] = true
		}
	}
	out := make([]history.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Flags&history.Internal != 0 {
			continue
		}
		if m.Flags&history.Mixed != 0 && len(mine) > 0 {
			if kept, ok := m.Codec().KeepCalls(m.Raw, func(id string) bool { return !mine[id] }); ok {
				m.Raw = kept
			}
		}
		out = append(out, m)
	}
	return out
}

// fork copies r's conversation up to and including r's turn into a new
// conversation, whose id it returns: a request naming an older response
// than the latest continues there, and the original, untouched, is still
// continued by its own latest response. The copy is the active messages,
// as stored, in one commit; the original's summary is not copied (the
// fork's own compaction makes one when its history calls for it). If the
// request then fails, the fork stays, holding the history up to r.
func (s *Server) fork(ctx context.Context, ns string, r *storedResponse) (string, error) {
	var copies []history.Message
	err := s.cfg.Store.Messages(ctx, r.key, 0, false, func(m history.Message) bool {
		if m.Seq > r.end {
			return false
		}
		copies = append(copies, history.Message{Role: m.Role, Protocol: m.Protocol, Raw: bytes.Clone(m.Raw),
			Hash: m.Hash, Tokens: m.Tokens, Flags: m.Flags & history.Recorded})
		return true
	})
	if err != nil {
		return "", storeReadErr(err)
	}
	id := forkID(forkRoot(r.ref.Conversation))
	if _, err := s.cfg.Store.Commit(ctx, history.Key{Tenant: ns, Conversation: id},
		history.Change{Append: copies, Now: s.cfg.Now().UnixNano()}); err != nil {
		return "", storeWriteErr(fmt.Errorf("proxy: fork %s: %w", r.ref.Conversation, err))
	}
	return id, nil
}

// forkSep joins a conversation's name and a fork's own part in the
// fork's id: <name>:fork-<16 hex digits>.
const forkSep = ":fork-"

// forkID is the id of a new fork of the conversation named root: a fork
// stays addressable by the name it was made under (see forkRoot), and
// by its own id. A name too long to carry the suffix within
// history.ValidID's 128 characters forks into a conv_ id of Recall's,
// addressable by that id alone.
func forkID(root string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := root + forkSep + hex.EncodeToString(b[:])
	if !history.ValidID(id) {
		return newConversationID()
	}
	return id
}

// forkRoot returns the name conversation id was forked under, or id
// itself when it is not a fork's: a request naming the root (header,
// path prefix or body) may chain by a response of any fork of it, and
// continues that fork.
func forkRoot(id string) string {
	i := strings.LastIndex(id, forkSep)
	if i <= 0 {
		return id
	}
	root, suffix := id[:i], id[i+len(forkSep):]
	if len(suffix) != 16 {
		return id
	}
	if _, err := hex.DecodeString(suffix); err != nil || strings.ToLower(suffix) != suffix {
		return id
	}
	return root
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
