package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/slicepool"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

// The exchange pipeline: every request to a protocol's route goes
// through these stages, in this order (in proxy: the stage that needs
// HTTP or the server; in pipeline: the stage it calls):
//
//	admit    read the body, authenticate the caller      (serve, admit)
//	target   the conversation and the history mode       (target)
//	branch   records nothing, to its own protocol: sent  (pipeline.AsSent, forwardAsSent)
//	         as it came, validated, not decoded
//	decode   the body with the client's protocol          (parseRequest; pipeline.TurnOf)
//	resolve  the conversation the body names (Responses)  (resolve)
//	thread   main thread, subagent or side call           (threadOf)
//	plan     lock, load, merge, summary, curate           (planTurn, prepare; pipeline.Deps.Plan)
//	encode   the context in the upstream's protocol       (encode; pipeline.EncodePlan)
//	send     one upstream call                            (call, send)
//	pump     a stream's events, relayed or rendered       (relaySeam; pipeline.Pump)
//	         in a goroutine of their own                  (relay; pipeline.Relay)
//	         or a whole answer read                       (answerWhole; pipeline.ParseAnswer)
//	commit   the turn, before the client holds its end    (commitAnswer, record1; pipeline.Deps.Commit,
//	                                                       pipeline.CommitStream, pipeline.CommitWhole)
//	render   the answer in the client's protocol          (answerWhole, relaySeam; pipeline.Whole, pipeline.Stream)
//
// History tools' rounds (tools.go) take over after encode and use the
// same send (call), pump (pipeline.ReadRound), hold-until-commit rule
// and commit; what a round's answer leads to is pipeline.Rounds.Step.

// serveExchange serves a request once its conversation and mode are known.
// Every call ends in exactly one x.done or x.fail, and x's lifetime ends
// here unless a stream's relay took the exchange over.
func (s *Server) serveExchange(rc *fasthttp.RequestCtx, x *exchange, body []byte, conv string, mode history.Mode, p *protocol) {
	req, err := parseRequest(rc, p, body)
	if err != nil {
		x.fail(rc, err)
		return
	}
	upProto, _ := wire.UpstreamFor(x.c.cfg.Upstream.Protocol, p.proto)
	x.upstream = upProto
	up := protocols[upProto]
	x.in, x.up, x.req = p, up, req
	relayed := false
	defer func() {
		if !relayed { // else x is the relay's, which ends it
			x.life.End()
			x.releasePlan()
		}
	}()
	exp, err := x.resolve(p, req, conv)
	if err != nil {
		x.fail(rc, err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), x.c.timeout())
	x.life.own.Cancel = cancel
	x.record = x.key.Conversation != "" && mode != history.Off
	x.threadOf(rc, req)
	if x.record {
		if x.life.own.Release, err = x.planTurn(ctx, rc, p, req, mode); err != nil {
			x.fail(rc, err)
			return
		}
	}
	x.life.dropHeld() // not taken over: nothing is recorded
	ctxt, err := x.encode(p, up, req, exp)
	if err != nil {
		x.fail(rc, err)
		return
	}
	if x.record {
		x.curated(rc)
	}
	if p.answers != nil {
		p.answers(x, req)
	}
	if offered := x.offeredTools(req); len(offered) > 0 {
		relayed = s.toolExchange(ctx, rc, x, p, up, req, ctxt.instr, ctxt.msgs, ctxt.lastHistory, ctxt.lastSeq, offered)
		return
	}
	// A request that records nothing, to an upstream of its own protocol,
	// whose messages go as they came, goes as it came: the body the
	// codec would build is the same up to white space.
	asCame := !x.record && upProto == p.proto && p.answers == nil &&
		pipeline.SameRaw(ctxt.instr, req.Instructions) && pipeline.SameRaw(ctxt.msgs, req.Messages)
	out := body
	if !asCame {
		out, err = x.appendBody(up, getBodyBuf(len(body)+x.contextTokens()*4), req, ctxt.instr, ctxt.msgs, ctxt.lastHistory, ctxt.lastSeq)
		if err != nil {
			x.fail(rc, err)
			return
		}
	}
	ctxt.release() // the body holds the context now
	upReq := fasthttp.AcquireRequest()
	up.request(upReq, rc, x.c, req, p.proto)
	upReq.SetBodyRaw(out)
	resp, err := x.call(ctx, upReq, nil)
	if !asCame {
		putBodyBuf(out)
	}
	if err != nil {
		x.fail(rc, err)
		return
	}
	status := resp.StatusCode()
	ok := status >= 200 && status < 300
	same := upProto == p.proto && !p.renders
	if !ok && !same && upProto != p.proto {
		x.translatedError(rc, resp)
		return
	}
	uplink.CopyResponseHeader(rc, resp)
	if uplink.IsEventStream(resp) {
		if !same {
			rc.Response.Header.Del("Content-Encoding")
		}
		relayed = true
		s.relaySeam(ctx, rc, x, resp, p, up, req, same, ok)
		return
	}
	x.answerWhole(rc, resp, p, up, req, same)
}

// resolve is the stage that finds the conversation a Responses request
// continues (its body's conversation or previous_response_id, a
// compaction of Recall's in its input) when the header or path prefix
// named none (conv), and sets it on x and req. It may take the
// conversation's lock, which the plan takes over (x.life.held).
func (x *exchange) resolve(p *protocol, req *wire.Request, conv string) (exp *expansion, err error) {
	if p.proto == wire.Responses {
		if exp, conv, err = x.expand(req, conv, x.upstream); err != nil {
			return nil, err
		}
	}
	if p.resolve != nil {
		if conv, err = p.resolve(x, req, conv); err != nil {
			return nil, err
		}
	}
	if exp != nil && conv != exp.ref.Conversation {
		return nil, apierr.ConversationConflict("input")
	}
	x.key.Conversation, req.Conversation = conv, conv
	return exp, nil
}

// threadOf is the stage that reads which thread a recorded request
// belongs to (package thread): a side call goes upstream as sent and
// nothing of it is recorded.
func (x *exchange) threadOf(rc *fasthttp.RequestCtx, req *wire.Request) {
	if !x.record {
		return
	}
	x.thread = seamThread(x, rc, req)
	if x.side = thread.Before(x.thread); x.side != "" {
		x.record, x.key.Tenant, x.model = false, x.c.Namespace, req.Model
	}
}

// planTurn is the plan stage of a recorded request: its turn read through
// the client's codec and planned against the stored conversation (see
// prepare). It returns the conversation's release, which the caller owns;
// a plan that finds a side call leaves x unrecorded and returns none.
func (x *exchange) planTurn(ctx context.Context, rc *fasthttp.RequestCtx, p *protocol, req *wire.Request, mode history.Mode) (func(), error) {
	s := x.s
	x.key.Tenant = x.c.Namespace
	if s.cfg.CanCommit != nil {
		if err := s.cfg.CanCommit(); err != nil {
			return nil, fmt.Errorf("%w: %w", apierr.NoSpace, err)
		}
	}
	x.retry = retryOf(rc)
	instructions, in, err := pipeline.TurnOf(p.proto, req)
	if err != nil {
		return nil, err
	}
	// An answer whose id names where it is stored cannot be rebased
	// (see nameResponse): a commit that would move it fails instead.
	x.pinned = p.answers != nil
	release, err := x.prepare(ctx, instructions, in, req.Model, req.MaxTokens, req.ToolsRaw, mode)
	if reason, ok := pipeline.SideOf(err); ok && ownFork(x, p, req, reason) {
		release, err = x.prepare(ctx, instructions, in, req.Model, req.MaxTokens, req.ToolsRaw, mode)
	}
	if reason, ok := pipeline.SideOf(err); ok {
		x.record, x.side, x.model = false, reason, req.Model
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	x.oneChoice = req.Choices <= 1
	return release, nil
}

// ownFork moves a Responses request that a named conversation makes a
// side call for sending no tools where its main thread does (package
// thread's rule 3) to a new fork of the name of its own
// (<name>:fork-<hex>, empty), and reports whether it did: a request that
// did not ask store:false is stored as OpenAI stores it, its id chainable
// under the name, while the agent's thread neither gets nor keeps any of
// it. A side call by any other rule, one chained by
// previous_response_id, and store:false stay plain side calls.
func ownFork(x *exchange, p *protocol, req *wire.Request, reason string) bool {
	if p.answers == nil || reason != thread.ReasonNoTools || !req.Store || req.PreviousResponseID != "" || x.key.Conversation == "" {
		return false
	}
	x.key.Conversation = respstate.NewForkID(x.key.Conversation)
	req.Conversation = x.key.Conversation
	return true
}

// encoded is the context as the upstream gets it: instructions (and the
// summary) apart from the conversation's messages; lastHistory is the
// index among msgs of the last stored message sent, when the context went
// as stored (-1: none, or not as stored).
type encoded struct {
	instr, msgs [][]byte
	lastHistory int
	// lastSeq is the stored seq of the last history message (0: none).
	lastSeq uint64
	// box holds the array instr and msgs lie in, from encodedArrays,
	// until release gives it back (nil: none taken).
	box *[][]byte
}

// encodedArrays keeps the arrays a recorded request's encoded context
// was laid out in (one entry a message sent), as plan's and history's
// pools keep theirs.
var encodedArrays = slicepool.Pool[[]byte]{Max: 1024}

// release gives e's array back once the upstream body is built from it:
// neither instr nor msgs may be read after.
func (e *encoded) release() {
	box := e.box
	e.box, e.instr, e.msgs = nil, nil, nil
	encodedArrays.Put(box)
}

// encode is the stage that puts the planned context (or, for a request
// that records nothing, the request's own messages) in the upstream's
// protocol.
func (x *exchange) encode(p, up *protocol, req *wire.Request, exp *expansion) (encoded, error) {
	e := encoded{lastHistory: -1}
	var planned []plan.Message
	if x.record {
		planned = pipeline.InPlace(x.dec.Messages, p.proto, req)
	} else {
		planned = make([]plan.Message, 0, len(req.Instructions)+len(req.Messages)+1)
		for _, m := range req.Instructions {
			planned = append(planned, plan.Message{Kind: plan.Instruction, Protocol: p.proto, Raw: m})
		}
		if m, ok := summaryOf(exp, req.Instructions, p.proto); ok {
			planned = append(planned, m)
		}
		for _, m := range req.Messages {
			planned = append(planned, plan.Message{Kind: plan.New, Protocol: p.proto, Raw: m})
		}
	}
	var scratch [][]byte
	if x.record {
		e.box = encodedArrays.Get(len(planned))
		scratch = *e.box
	}
	instr, msgs, asStored, err := pipeline.EncodePlanIn(scratch, up.proto, planned)
	if err != nil {
		e.release()
		return e, err
	}
	e.instr, e.msgs = instr, msgs
	var roles []string
	if x.record && asStored { // msgs are the last len(msgs) planned, one for one
		sent := planned[len(planned)-len(msgs):]
		for i := range sent {
			if m := &sent[i]; m.Kind == plan.History {
				e.lastHistory, e.lastSeq = i, m.Seq
			}
		}
		if up.join != nil {
			roles = storedRoles(sent)
		}
	}
	if up.join != nil {
		e.msgs, e.lastHistory = up.join(e.msgs, roles, e.lastHistory)
	}
	return e, nil
}

// storedRoles returns the roles of the history among msgs, which the
// codec gave them when they were stored, and "" for the others (a
// message placed in the request's order, planned as a system one,
// whatever its codec says).
func storedRoles(msgs []plan.Message) []string {
	roles := make([]string, len(msgs))
	for i, m := range msgs {
		if m.Kind == plan.History {
			roles[i] = m.Role
		}
	}
	return roles
}

// appendBody appends the body of req's call to up with instr and msgs,
// the end of the history it sends (the message at index last, stored as
// seq) marked for the upstream's prompt cache, where the upstream has
// one (up.mark) and the mark fits; the record names the message marked,
// for the inspector's render.
func (x *exchange) appendBody(up *protocol, dst []byte, req *wire.Request, instr, msgs [][]byte, last int, seq uint64) ([]byte, error) {
	if up.mark == nil || last < 0 {
		return up.upstream.AppendBody(dst, req, instr, msgs)
	}
	body, marked, err := up.mark(dst, req, instr, msgs, last)
	if marked {
		x.rec.CacheBreakpoint = seq
	}
	return body, err
}

// send is the one upstream call of every exchange and round: req (which
// it releases) sent within ctx's deadline. The response is the caller's.
func (s *Server) send(ctx context.Context, req *fasthttp.Request) (*fasthttp.Response, error) {
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	deadline, _ := ctx.Deadline()
	err := uplink.Do(s.client, req, resp, time.Until(deadline))
	fasthttp.ReleaseRequest(req)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return nil, upstreamErr(err)
	}
	return resp, nil
}

// call is the send stage of every exchange and of each of its history
// tools' rounds: req (which it releases) sent (Server.send), the times
// noted in the exchange's record (sent, and the first answer's headers:
// answered) and in round's, if given. The response is the caller's.
func (x *exchange) call(ctx context.Context, req *fasthttp.Request, round *pipeline.Round) (*fasthttp.Response, error) {
	sent := x.now()
	if x.rec.Sent.IsZero() {
		x.rec.Sent = sent
	}
	if round != nil {
		round.Sent = sent
	}
	resp, err := x.s.send(ctx, req)
	if err != nil {
		return nil, err
	}
	if round != nil {
		round.FirstByte = x.now()
	}
	if x.rec.FirstByte.IsZero() {
		x.answered(resp)
	}
	return resp, nil
}

// translatedError answers an upstream's error status to a client of
// another protocol in that protocol's shape, and releases resp.
func (x *exchange) translatedError(rc *fasthttp.RequestCtx, resp *fasthttp.Response) {
	status := resp.StatusCode()
	raw, _ := pipeline.ReadLimited(uplink.Body(resp), 1<<20)
	x.learnWindow(status, string(resp.Header.ContentEncoding()), raw)
	e := pipeline.UpstreamStatus(status, raw)
	e.RetryAfter = string(resp.Header.Peek(fasthttp.HeaderRetryAfter)) // when to try again holds in any protocol
	uplink.Release(resp)
	x.rec.UpstreamDone = x.now()
	x.fail(rc, e)
}

// answerWhole reads a non-streamed answer, commits a recorded turn before
// the client gets it, and renders it: the upstream's bytes as they came
// to a client of its protocol (same), else in the client's.
func (x *exchange) answerWhole(rc *fasthttp.RequestCtx, resp *fasthttp.Response, p, up *protocol, req *wire.Request, same bool) {
	status := resp.StatusCode()
	raw, enc, read := x.readAnswer(rc, resp)
	if !read {
		return
	}
	if status < 200 || status >= 300 { // the upstream's error, in the client's protocol already
		rc.Response.SetBodyRaw(raw)
		x.done(status, nil)
		return
	}
	a := &x.life.answer
	var err error
	if *a, err = pipeline.ParseAnswer(up.upstream, enc, raw, x.s.cfg.MaxResponseBytes, same); err == nil {
		err = pipeline.Whole(client{rc}, x, a, raw, x.renderWhole(p, req), req, same, x.record)
	}
	switch {
	case errors.Is(err, pipeline.ErrClientLeft):
		x.done(499, err)
		return
	case err != nil:
		x.fail(rc, err)
		return
	}
	x.done(status, nil)
}
