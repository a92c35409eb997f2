package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

const headerHistory = "X-Recall-History"

// keyHistory is headerHistory as fasthttp's server normalizes it.
var keyHistory = []byte(headerHistory)

// headerMemory is "none" on the answer to a request that named a
// conversation on a path that keeps no memory.
const headerMemory = "X-Recall-Memory"

// exchange is one recorded (or forwarded) call of any protocol: everything
// the commit needs, copied out of the RequestCtx so that it may outlive the
// handler (a stream is relayed and committed after the handler returns).
// Its state is in four parts, each with its own rule:
//
//	request  what the request is (embedded: x.key, x.c, ...): set by
//	         the handler while it admits, decodes, resolves and plans
//	         the request; read-only once the exchange is handed over
//	dec      what the plan decided (pipeline.Decision): made once by the
//	         plan stage (the answer's id may draw its incarnation before
//	         the call, nameResponse), read-only after; the one part the
//	         commit's own goroutine reads (pipeline.Deps.Commit)
//	rec      what its record and log line report (facts): written by
//	         whichever goroutine owns the exchange
//	life     what it owns until it ends (lifetime), and its End
//
// One goroutine owns an exchange at a time: the handler, and for a
// streamed answer the relay goroutine the handler hands it to (relay).
// From the hand-over on, the handler touches nothing of x, and the relay
// nothing of the RequestCtx. The commit's goroutine, which may outlive
// the exchange past its deadline, reads dec and the change it was given
// alone (the change points to life.lease, which guards itself).
type exchange struct {
	request
	dec  *pipeline.Decision
	rec  facts
	life lifetime
}

// request is what an exchange's request is: its caller, conversation,
// thread, protocols and decoded body, and what the plan settled of it
// (model, oneChoice, pinned). The handler sets it before any upstream
// call (respReq, pinned: as the answer's id is named, right after the
// plan); nothing writes it once the exchange is handed to a stream's
// relay (but the stream's renderer, which stamps the decoded request's
// Created in the relay: newRenderer).
type request struct {
	s   *Server
	c   caller
	key history.Key
	// record: the exchange records a turn; model is the request's model
	// (a summary job's default).
	record bool
	model  string
	// thread is the request as package thread reads it (nil: not a
	// recorded request); side, why it is a side call ("": the main
	// thread): it goes upstream as sent and nothing of it is stored.
	thread *thread.Request
	side   string
	// th and instr hold what thread points to: no allocation for a
	// request of up to four instruction messages.
	th    thread.Request
	instr [4][]byte
	// oneChoice is set when the request asks for one choice, so the
	// upstream's completion tokens count the recorded answer alone.
	oneChoice bool
	// retry says how the request may repeat the last exchange.
	retry history.Retry
	// pinned is set when the answer's id names where it is stored (the
	// Responses API's): a rebase that would move it fails instead.
	pinned bool
	// respReq is a stored Responses request (see nameResponse): its
	// answer's commit keeps the Response object returned (responseOf).
	respReq *wire.Request
	// storedBy renders respReq's Response object from the rendering its
	// stream's last event carries (a streamed answer: storeFrom); nil
	// for any other.
	storedBy storedRenderer
	// render renders an error in the client's protocol (nil: OpenAI's);
	// route names the exchange's route in metrics and logs ("": chat).
	render   func(*apierr.Error) []byte
	route    string
	upstream wire.Protocol // the protocol the upstream speaks
	// in and up are the client's protocol and the upstream's, req the
	// decoded request: what the render stage's Stamp needs.
	in, up *protocol
	req    *wire.Request
	// hop is the base URL of the replica the request was forwarded to,
	// which serves it (see hop): "" for a request served here.
	hop string
}

// facts are what an exchange's record and log line report: its times,
// the upstream's usage and what the commit stored (pipeline.Record), its
// history tools' rounds, and its trace span. The goroutine that owns the
// exchange writes them: the handler, then a stream's relay.
type facts struct {
	pipeline.Record
	// rounds are the upstream calls of an exchange with history tools
	// offered (tools.go), each with its own exchange record.
	rounds []pipeline.Round
	// span is the exchange's trace span (nil: tracing is off; trace.go).
	span *tracing.Exchange
}

// lifetime is what an exchange owns until it ends, and what decides how
// its end goes. End releases what it holds; a stream's relay takes own
// (relay) and ends it itself, after the exchange's done.
type lifetime struct {
	// own is the exchange's deadline and the lock its plan took
	// (pipeline.Owned), until a stream's relay takes them.
	own pipeline.Owned
	// held, if set, releases the conversation's lock (and its lease)
	// that resolve took to decide under it which conversation a request
	// continues (see resolveResponses): prepare takes it over instead of
	// taking the lock again, and an exchange that does not prepare drops
	// it (dropHeld).
	held func()
	// lease is the exchange's lease on its conversation across replicas
	// (see prepare): taken by the plan's read, dropped by the commit (its
	// Change points to it), and released with the lock on every other end.
	lease history.ExchangeLease
	// conn is a streamed exchange's client connection, looked at before
	// its commit (leftBeforeCommit); stream its upstream answer, which
	// its relay reads and releases (see relay).
	conn   net.Conn
	stream upstreamStream
	// answered is closed when a stream's answer is whole and its commit
	// begins (Committing): its headers then wait for what follows the
	// commit (holdHeaders). The relay owns it.
	answered chan struct{}
	// committed is set once the turn is recorded; endEpisode when the
	// model called end_conversation: the commit then seals the open
	// episode, this turn included.
	committed, endEpisode bool
	// answer is a non-streamed answer, parsed (kept here: no allocation
	// of its own).
	answer wire.Answer
}

// End releases what l holds: the plan's lock, then the deadline (own),
// then a lock resolve held that no plan took over.
func (l *lifetime) End() {
	l.own.End()
	l.dropHeld()
}

// exchanges recycles the exchanges of the path without history, which
// end with their handler (see chat).
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

// serve serves POST to a protocol's route (p's; conv is the id from
// the path prefix, if any, path the route's path): admit, target, then
// the pipeline, whose same-protocol branch (pipeline.AsSent) sends a body
// that records nothing to an upstream of its own protocol as it came,
// validated but not decoded (forwardAsSent). A request with memory on a
// conversation another replica owns goes to that replica instead
// (forwardToOwner), but a WebSocket's turn (socket), served here. Every
// call ends in exactly one x.done or x.fail, so every exchange is
// logged, counted and reported once, whatever its end.
func (s *Server) serve(rc *fasthttp.RequestCtx, conv string, p *protocol, path []byte, socket bool) {
	x := exchanges.Get().(*exchange)
	x.s, x.rec.Start, x.render, x.route = s, s.startOf(rc), p.render, p.route
	x.key.Conversation = conv
	body, admitted := s.admit(rc, x)
	if !admitted {
		return
	}
	conv, mode, err := x.target(rc, conv)
	if err != nil {
		x.fail(rc, err)
		return
	}
	if conv != "" && mode != history.Off && !socket {
		if owner, elsewhere := s.owner(rc, x, conv); elsewhere && s.forwardToOwner(rc, x, body, conv, owner) {
			return
		}
	}
	up, _ := wire.UpstreamFor(x.c.cfg.Upstream.Protocol, p.proto)
	if p.check != nil && pipeline.AsSent(p.proto, up, conv != "" && mode != history.Off, len(x.c.cfg.History.Tools) > 0) {
		// Validated as the recorded path validates it (the same error
		// for the same body).
		stream, err := p.check(body)
		if err != nil {
			x.fail(rc, err)
			return
		}
		s.forwardAsSent(rc, x, body, path, stream)
		return
	}
	s.serveExchange(rc, x, body, conv, mode, p)
}

// readAnswer reads a non-streamed answer whole, bounded by
// MaxResponseBytes, and releases resp; an error answer may teach the
// calibration the model's window (learnWindow). On a failure it answers and
// reports false.
func (x *exchange) readAnswer(rc *fasthttp.RequestCtx, resp *fasthttp.Response) (raw []byte, enc string, ok bool) {
	status := resp.StatusCode()
	enc = string(resp.Header.ContentEncoding())
	raw, err := pipeline.ReadLimited(uplink.Body(resp), x.s.cfg.MaxResponseBytes)
	uplink.Release(resp)
	x.rec.UpstreamDone = x.now()
	if errors.Is(err, pipeline.ErrTooLarge) {
		x.fail(rc, fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err))
		return nil, "", false
	}
	if err != nil {
		x.fail(rc, upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", err)))
		return nil, "", false
	}
	if status >= 400 {
		x.learnWindow(status, enc, raw)
	}
	return raw, enc, true
}

// admit reads the request's body and authenticates its caller into x.c.
// The body is read first, so that every answer leaves the connection clean
// for its next request. On a failure it answers and reports false.
func (s *Server) admit(rc *fasthttp.RequestCtx, x *exchange) ([]byte, bool) {
	body, err := s.readBody(rc)
	if err != nil {
		rc.SetConnectionClose()
		x.fail(rc, err)
		return nil, false
	}
	if s.cfg.Tracer != nil && x.route != "count_tokens" {
		x.beginSpan(rc, body)
	}
	if x.c, err = s.authenticate(rc); err != nil {
		x.fail(rc, err)
		return nil, false
	}
	return body, true
}

// conversation returns the conversation the request names: by the path
// prefix (conv) or the tenant's header, which may both name it but not
// two different ones.
//
// A subagent's request names a thread of the conversation (threadName):
// the id returned is then the thread's (history.ThreadID), a conversation
// of its own whose history is the subagent's, never the main thread's.
func (x *exchange) conversation(rc *fasthttp.RequestCtx, conv string) (string, error) {
	h, err := conversationID(rc, x.c.convHeader)
	switch {
	case err != nil:
		return "", err
	case conv == "":
		conv = h
	case h != "" && h != conv:
		return "", apierr.TwoConversationIDs
	}
	if conv == "" {
		return "", nil
	}
	name, err := threadName(rc)
	if err != nil || name == "" {
		return conv, err
	}
	return history.ThreadID(conv, name), nil
}

// headerAgentID is the header Claude Code's subagents send (its main
// thread's calls do not).
const headerAgentID = "X-Claude-Code-Agent-Id"

// threadName is the thread a request names: X-Recall-Thread (but its
// side and main, see package thread), else Claude Code's subagent id;
// "" for the main thread. A name that cannot name a thread is refused,
// from X-Recall-Thread, or hashed, from an agent's header.
func threadName(rc *fasthttp.RequestCtx) (string, error) {
	if v := rc.Request.Header.Peek(thread.Header); len(v) > 0 && string(v) != thread.Side && string(v) != thread.Main {
		if !history.ValidThreadName(string(v)) {
			return "", apierr.InvalidValue(thread.Header, "X-Recall-Thread must be side, main, or a thread's name: 1-64 characters of [A-Za-z0-9._:@-].")
		}
		return string(v), nil
	}
	v := rc.Request.Header.Peek(headerAgentID)
	switch {
	case len(v) == 0:
		return "", nil
	case history.ValidThreadName(string(v)):
		return string(v), nil
	}
	return "agent-" + strconv.FormatUint(xxhash.Sum64(v), 16), nil
}

// curated sets the headers that say what curation did, and counts it.
func (x *exchange) curated(rc *fasthttp.RequestCtx) {
	rc.Response.Header.Set("X-Recall-Conversation", x.key.Conversation)
	rc.Response.Header.Set("X-Recall-Context-Tokens", strconv.Itoa(x.dec.Report.Tokens))
	rc.Response.Header.Set(headerHistory, strconv.Itoa(x.dec.Report.IncludedTurns)+"/"+strconv.Itoa(x.dec.Report.StoredTurns))
	curation := fmt.Sprintf("dropped_turns=%d truncated_tool_results=%d repaired_calls=%d",
		x.dec.Report.DroppedTurns, x.dec.Report.TruncatedToolResults, x.dec.Report.RepairedCalls)
	switch {
	case x.dec.Report.OverBudget && x.dec.Report.IncludedTurns > 1:
		curation += " over_budget=newest_turn_kept"
	case x.dec.Report.OverBudget:
		curation += " over_budget=current_turn_only"
	}
	switch {
	case x.dec.SummaryOmitted:
		curation += " summary=omitted"
	case x.dec.SummaryCut:
		curation += " summary=cut"
	}
	rc.Response.Header.Set("X-Recall-Curation", curation)
	x.s.metrics.Curated(x.c.cfg.ID, x.dec.Report)
}

// logExchange writes the exchange's request line.
func (s *Server) logExchange(x *exchange, level slog.Level, tenant string, status int, upstream, total time.Duration, err error) {
	attrs := []any{"route", x.routeName(), "tenant", tenant, "status", status,
		"upstream_ms", ms(upstream), "overhead_ms", ms(total - upstream)}
	if x.key.Conversation != "" {
		attrs = append(attrs, "conversation", x.key.Conversation)
	}
	if x.hop != "" {
		attrs = append(attrs, "forwarded_to", x.hop)
	}
	if x.record && x.dec != nil && !x.rec.Sent.IsZero() {
		attrs = append(attrs, "context_tokens", x.dec.Report.Tokens,
			"turns", strconv.Itoa(x.dec.Report.IncludedTurns)+"/"+strconv.Itoa(x.dec.Report.StoredTurns),
			"dropped_turns", x.dec.Report.DroppedTurns, "truncated_tool_results", x.dec.Report.TruncatedToolResults,
			"repaired_calls", x.dec.Report.RepairedCalls, "committed", x.life.committed)
		if x.dec.Replaced {
			attrs = append(attrs, "replaced_retry", true)
		}
	}
	if err != nil {
		if e := classify(err); e.Code != "" && status == e.Status {
			attrs = append(attrs, "code", e.Code)
		}
		attrs = append(attrs, "error", err.Error())
	}
	s.log.Log(context.Background(), level, "request", attrs...)
}

// forwardAsSent sends a request that records nothing (no conversation,
// X-Recall-History: off, a side call) upstream as it came; the exchange
// and the body's buffer serve the next request unless a stream's relay
// still holds the exchange.
func (s *Server) forwardAsSent(rc *fasthttp.RequestCtx, x *exchange, body, path []byte, stream bool) {
	owned := rc.RequestBodyStream() != nil // readBody read it into a buffer of readPool
	if !s.forward(rc, x, body, path, stream) {
		*x = exchange{}
		exchanges.Put(x)
	}
	if owned {
		putReadBuf(body)
	}
}

// forwardToOwner forwards a memory request on a conversation another
// replica owns to that replica (hop) and reports true once the request
// is answered; the exchange and the body's buffer then serve the next
// request unless a stream's relay still holds the exchange. It reports
// false when the owner could not be reached: the caller serves the
// request here, with the body and the exchange as they were.
func (s *Server) forwardToOwner(rc *fasthttp.RequestCtx, x *exchange, body []byte, conv, owner string) bool {
	answered, relayed := s.hop(rc, x, body, conv, owner)
	if !answered {
		return false
	}
	if !relayed {
		*x = exchange{}
		exchanges.Put(x)
	}
	if rc.RequestBodyStream() != nil { // readBody read it into a buffer of readPool
		putReadBuf(body)
	}
	return true
}

// threadHeader is the request's X-Recall-Thread header ("" when absent).
func threadHeader(rc *fasthttp.RequestCtx) string {
	switch h := rc.Request.Header.Peek(thread.Header); string(h) {
	case "":
		return ""
	case thread.Side:
		return thread.Side
	case thread.Main:
		return thread.Main
	default:
		return string(h)
	}
}

// hasTools reports whether a raw "tools" value defines any tool (nil,
// null and [] do not).
func hasTools(raw []byte) bool {
	return len(bytes.TrimSpace(raw)) > 2
}

// prepare plans the request (plan.Make: load, merge, summary, curate) into
// x.dec. It takes the conversation's lock in this process and returns its
// release, which the caller owns.
//
// Across replicas sharing a store, the plan's read takes the
// conversation's lease (x.life.lease, history.ExchangeLease) in its own round
// trip, waiting while another replica holds it, and the commit drops it
// in its own transaction (see record1): replicas take turns on a
// conversation, the first exchange on it included, and no plan is made
// from a head another replica is about to move. The release returned
// lets the lease go too, if the exchange ends without a commit. The
// commit is still checked against the version the plan was computed
// from, and rebased if another writer (the conversation API, a replica
// whose lease expired) committed since.
func (x *exchange) prepare(ctx context.Context, instructions, in []history.Message, model string, maxTokens int, tools []byte, mode history.Mode) (release func(), err error) {
	s, c := x.s, x.c
	var loaded func()
	if x.rec.span != nil {
		x.rec.span.PlanStart = x.now()
		loaded = func() { x.rec.span.Loaded = x.now() }
		defer func() {
			x.rec.span.PlanEnd = x.now()
			if x.dec != nil {
				x.rec.span.KeptTurns = x.dec.Report.IncludedTurns
			}
		}()
	}
	held := x.life.held
	x.life.held = nil
	ratio, window := x.learned(model)
	d, release, err := s.deps.Plan(ctx, c.cfg.ID, plan.Input{
		Key:          x.key,
		Policy:       c.policy(mode),
		Model:        model,
		MaxTokens:    maxTokens,
		Instructions: instructions,
		Tools:        tools,
		New:          in,
		Retry:        x.retry,
		Counter:      s.counter,
		Fixed:        s.fixed,
		Ratio:        ratio,
		Window:       window,
		Thread:       x.thread,
		Loaded:       loaded,
		Lease:        &x.life.lease,
	}, held, mode, x.pinned)
	if err != nil {
		return nil, err
	}
	x.dec, x.model = d, model
	return release, nil
}

// recorded is an answer as the commit records it.
type recorded struct {
	// answer are the answer's messages in their stored form (Role, Raw,
	// Protocol, Hash and Tokens set).
	answer             []history.Message
	model, id          string
	prompt, completion int
	// cached is the part of prompt the provider read from its cache,
	// created the part it wrote to it; upstream the protocol the upstream
	// spoke.
	cached, created int
	upstream        wire.Protocol
	// stop is why the answer ended: chat's finish_reason, the canonical
	// stop reason of another protocol's ("": not said).
	stop string
	// response is the Response object returned, kept with the answer's
	// first message (history.Message.Response); nil but for the
	// Responses API.
	response []byte
}

// record1 writes the new messages and the answer as one atomic change (see
// commit).
func (x *exchange) record1(r recorded) error {
	s := x.s
	if r.response != nil && len(r.answer) > 0 {
		r.answer = slices.Clone(r.answer)
		r.answer[0].Response = r.response
	}
	ch := x.dec.Change(r.answer, s.cfg.Now().UnixNano())
	ch.Model, ch.ResponseID, ch.PromptTokens, ch.CompletionTokens = r.model, r.id, r.prompt, r.completion
	// The commit drops the lease (one that fails keeps it, and the
	// exchange's end releases it).
	ch.Lease = &x.life.lease
	start := s.cfg.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommitTimeout)
	defer cancel()
	x.rec.Usage = wire.Usage{InputTokens: r.prompt, OutputTokens: r.completion, CachedTokens: r.cached, CacheCreationTokens: r.created}
	err := s.deps.Commit(ctx, start, x.dec, ch, x.c.cfg.ID, r.upstream.String(), &x.rec.Record)
	if x.rec.span != nil {
		x.rec.span.CommitStart, x.rec.span.CommitEnd, x.rec.span.ResponseModel, x.rec.span.FinishReason = start, s.cfg.Now(), r.model, r.stop
		if err == nil && s.cfg.Tracer.CaptureContent() {
			x.spanContent(r.answer, r.stop)
		}
	}
	if err != nil {
		return err
	}
	if x.life.endEpisode {
		if err := s.deps.Seal(ctx, x.dec); err != nil {
			// The turn is recorded; the episode stays open (an idle
			// timeout or the API can still end it).
			s.log.Error("end_conversation: seal failed", "tenant", x.c.cfg.ID, "conversation", x.key.Conversation, "error", err)
			x.life.endEpisode = false
		}
	}
	x.triggerSummary()
	return nil
}

// triggerSummary asks for a compaction after a commit that left more
// unsummarised turns than the tenant's trigger, that the budget could not
// send whole, or that sealed an episode (the fold). It never waits.
func (x *exchange) triggerSummary() {
	s, c, p := x.s, x.c, x.dec
	sum := c.cfg.Summary
	if s.cfg.Summaries == nil || p == nil || !sum.Enabled {
		return
	}
	if p.Pending <= sum.TriggerTurns && p.Fits && !p.Seal && !x.life.endEpisode {
		return
	}
	// In pass-through, the client's key, held in memory by the job only.
	s.cfg.Summaries.Trigger(c.cfg.ID, x.key, x.model, c.PassedKey(), !p.Fits)
}

// fail answers err in the client's protocol's shape (OpenAI's unless
// x.render says otherwise) and ends the exchange with it.
func (x *exchange) fail(rc *fasthttp.RequestCtx, err error) {
	e := classify(err)
	if x.render != nil {
		apierr.Write(rc, e, x.render)
	} else {
		writeError(rc, e)
	}
	x.done(e.Status, err)
}

// done logs the finished exchange, records its metrics and reports it to
// OnExchangeDone. It is called exactly once per chat request.
func (x *exchange) done(status int, err error) {
	s := x.s
	end := x.now()
	tenant := ""
	if x.c.tenant != nil {
		tenant = x.c.cfg.ID
	}
	upstream := time.Duration(0)
	if !x.rec.Sent.IsZero() {
		if x.rec.UpstreamDone.IsZero() {
			x.rec.UpstreamDone = end
		}
		upstream = x.rec.UpstreamDone.Sub(x.rec.Sent)
	}
	total := end.Sub(x.rec.Start)
	switch {
	case x.hop != "":
		// Counted by the replica that served it (and here by hop).
	case x.c.tenant != nil:
		s.metrics.CountTenantRequest(&x.c.series, tenant, x.routeName(), status)
	default:
		s.metrics.CountRequest(tenant, x.routeName(), status)
	}
	if !x.rec.Sent.IsZero() && x.hop == "" {
		if x.c.tenant != nil {
			s.metrics.TenantLatency(&x.c.series, tenant, total, upstream)
		} else {
			s.metrics.Latency(tenant, total, upstream)
		}
	}
	level := slog.LevelInfo
	if err != nil && status >= 500 && status != 499 {
		level = slog.LevelError
	}
	if s.log.Enabled(context.Background(), level) { // the line's attributes cost allocations
		s.logExchange(x, level, tenant, status, upstream, total, err)
	}
	x.calibrate(err)
	recorded := s.cfg.OnExchange != nil && (x.record && x.dec != nil || x.side != "") && !x.rec.Sent.IsZero()
	if recorded || x.rec.span != nil {
		r, rounds := x.records(status, err, end, upstream)
		if x.rec.span != nil {
			x.endSpan(&r, tenant, end)
		}
		if recorded {
			s.cfg.OnExchange(x.key, r)
			for _, rr := range rounds {
				s.cfg.OnExchange(x.key, rr)
			}
		}
	}
	if s.cfg.OnExchangeDone != nil {
		s.cfg.OnExchangeDone(ExchangeDone{Tenant: tenant, Conversation: x.key.Conversation, Forwarded: x.hop,
			Status: status, Committed: x.life.committed, Err: err})
	}
}

// routeName is the exchange's route in metrics and logs.
func (x *exchange) routeName() string {
	if x.route == "" {
		return "chat"
	}
	return x.route
}
