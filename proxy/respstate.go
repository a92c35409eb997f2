package proxy

import (
	"context"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/wire"
)

// The Responses API's state, kept by Recall (DESIGN section 11): which
// conversation a request continues and the ids of its answers; the
// stored responses they name are package respstate's.

// resolveResponses finds the conversation of a Responses request: conv
// (the header or the path prefix), else the body's conversation, else the
// conversation of previous_response_id; two of them naming different
// conversations is a 400 naming the later parameter. A
// previous_response_id older than its conversation's latest response
// continues a fork of it (respstate.State.Fork). With nothing named, store true
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
		return respstate.NewConversationID(), nil
	}
	return named, nil
}

// chained resolves a request chained by previous_response_id id (named:
// the conversation the request names otherwise, if any). Whether it
// continues the response's conversation or a fork is decided under the
// conversation's lock, and its lease where replicas share the store
// (x.life.lease, taken by the read of the response's conversation in that
// read's round trip): of requests chained on one response at once, the
// first continues and the others, finding the response no longer the
// latest once the first committed, fork. A request that continues keeps
// both for its exchange (x.life.held, which prepare takes over).
func (x *exchange) chained(id, named string) (string, error) {
	ref, ok := respstate.ParseID(id)
	if !ok {
		return "", apierr.PreviousResponseNotFound
	}
	ctx, cancel := context.WithTimeout(context.Background(), x.c.timeout())
	defer cancel()
	unlock, err := x.s.cfg.Locks.Acquire(ctx, history.Key{Tenant: x.c.Namespace, Conversation: ref.Conversation})
	if err != nil {
		return "", apierr.Busy
	}
	release := func() { x.life.lease.Release(); unlock() }
	defer func() {
		if release != nil {
			release()
		}
	}()
	r, err := x.s.state.LoadLeased(ctx, x.c.Namespace, id, &x.life.lease)
	if err != nil {
		if ctx.Err() != nil {
			return "", apierr.Busy // another replica held the lease throughout
		}
		return "", err
	}
	if r == nil {
		return "", apierr.PreviousResponseNotFound
	}
	if named != "" && named != r.Ref.Conversation && respstate.ForkRoot(r.Ref.Conversation) != named {
		return "", apierr.ConversationConflict("previous_response_id")
	}
	if !r.Latest {
		return x.s.state.Fork(ctx, x.c.Namespace, r)
	}
	x.life.held, release = release, nil
	return r.Ref.Conversation, nil
}

// dropHeld releases the lock (and lease) resolve held for an exchange
// that does not prepare (a side call, history off, a request refused
// before its plan).
func (l *lifetime) dropHeld() {
	if l.held != nil {
		l.held()
		l.held = nil
	}
}

// nameResponse gives a Responses answer Recall's id before it is made
// (its stream names it in its first event). A recorded answer's id names
// where the commit will store it (respstate.Ref): the conversation's
// incarnation, drawn here for a conversation this exchange creates, and
// the sequence number its first message gets, after the request's new
// messages. The exchange is pinned to them: a commit that would land
// elsewhere fails rather than leave the id naming other messages.
//
// The answer's "store" says whether Recall stores it as a response, whatever
// the request asked: a store:false request that continues a stored
// response is stored with its conversation, and says so. A store:false
// request that continues none gets an id that names nothing even where a
// named conversation records its turn (the memory keeps the turn, no
// previous_response_id reaches it): as OpenAI's, its chain goes on only on
// the socket that holds it (Open Responses'
// websocket-reconnect-store-false-recovery), whatever else the
// conversation holds.
func nameResponse(x *exchange, req *wire.Request) {
	req.Created = x.rec.Start.Unix()
	req.Store = x.record && x.dec != nil && (req.Store || req.PreviousResponseID != "")
	if !req.Store {
		// Stored nowhere: an id that names nothing.
		req.ResponseID = "resp_" + respstate.NewConversationID()[len("conv_"):]
		return
	}
	m := &x.dec.Meta
	inc := m.Incarnation
	if m.NextSeq == 0 {
		inc = respstate.NewIncarnation()
		x.dec.Incarnation = inc
	}
	x.pinned, x.respReq = true, req
	req.ResponseID = respstate.Ref{Conversation: x.key.Conversation, Incarnation: inc,
		Seq: max(m.NextSeq, 1) + uint64(len(x.dec.Fresh)), Input: len(x.dec.Fresh)}.ID()
}

// responseOf is the Response object a, the answer of a stored Responses
// request, is returned as, its output an empty array: its turn keeps it
// (history.Message.Response) for GET /v1/responses/{id}. nil for any
// other exchange. Packed (responses.PackStored): the turn keeps it in the
// store and the cache.
func (x *exchange) responseOf(a *wire.Answer) []byte {
	switch {
	case x.respReq == nil:
		return nil
	case x.storedBy != nil:
		return responses.PackStored(nil, x.storedBy.StoredResponse(nil, a))
	}
	return responses.PackStored(nil, responses.AppendStoredResponse(nil, x.respReq, a))
}

// storeFrom has the stored Response object of req's answer rendered by
// ren, the renderer of its stream, from the Response its last event
// carries, when req is a stored Responses request. Only where the answer
// committed is the answer ren ends the stream with, unchanged
// (pipeline.Stream): the history tools' rounds drop parts of it in
// between.
func (x *exchange) storeFrom(ren wire.Renderer, req *wire.Request) {
	if sr, ok := ren.(storedRenderer); ok && req == x.respReq {
		x.storedBy = sr
	}
}

// renderWhole is what renders a non-streamed answer to req, of p's
// protocol: p's ingress, but for a stored Responses request a renderer
// that renders the answer's Response once, for the stored copy the turn
// keeps (responseOf) and for the client.
func (x *exchange) renderWhole(p *protocol, req *wire.Request) pipeline.AnswerRenderer {
	if req != x.respReq {
		return p.ingress
	}
	ren, ok := p.ingress.NewRenderer(req).(wholeRenderer)
	if !ok {
		return p.ingress
	}
	x.storedBy = ren
	return ren
}

// wholeRenderer renders a non-streamed answer from the stored Response
// object it rendered for the commit.
type wholeRenderer interface {
	storedRenderer
	pipeline.AnswerRenderer
}

var _ wholeRenderer = (*responses.Renderer)(nil)

// storedRenderer is a stream's renderer that renders the stored
// Response object of the answer it renders the end of
// (responses.Renderer.StoredResponse).
type storedRenderer interface {
	StoredResponse(dst []byte, a *wire.Answer) []byte
}

var _ storedRenderer = (*responses.Renderer)(nil)
