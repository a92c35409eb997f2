package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/tokens"
	"github.com/recallproxy/recall/rewrite"
)

const headerHistory = "X-Recall-History"

// exchange is one chat-completions call on a conversation: everything the
// commit needs, copied out of the RequestCtx so that it may outlive the
// handler (a stream is relayed and committed after the handler returns).
type exchange struct {
	s       *Server
	c       caller
	key     history.Key
	enc     tokens.Encoding
	version uint64
	fresh   []history.Message // new messages, in their stored form
	super   *history.Boundary
	cut     uint64
	report  history.Report
	release func()
	record  bool
	// committed is set once the turn is recorded.
	committed bool
	// oneChoice is set when the request asks for one choice, so the
	// upstream's completion tokens count the recorded answer alone.
	oneChoice bool
	start     time.Time
	sent      time.Time // request sent upstream
}

// chat serves POST /v1/chat/completions. conv is the id from the path
// prefix, if any.
func (s *Server) chat(rc *fasthttp.RequestCtx, conv string, path []byte) {
	start := s.cfg.Now()
	// The body is read first, so that every answer below leaves the
	// connection clean for its next request.
	body, err := s.readBody(rc)
	if err != nil {
		rc.SetConnectionClose()
		s.fail(rc, "chat", "", err, start)
		return
	}
	c, err := s.authenticate(rc)
	if err != nil {
		s.fail(rc, "chat", "", err, start)
		return
	}
	if conv == "" {
		if conv, err = conversationID(rc, c.convHeader); err != nil {
			s.fail(rc, "chat", c.cfg.ID, err, start)
			return
		}
	}
	mode := c.mode
	if h := rc.Request.Header.Peek(headerHistory); len(h) > 0 {
		if mode, err = history.ParseMode(string(h)); err != nil {
			s.fail(rc, "chat", c.cfg.ID, errBadMode, start)
			return
		}
	}
	req, err := rewrite.ParseRequest(body)
	if err != nil {
		s.fail(rc, "chat", c.cfg.ID, err, start)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	x := &exchange{s: s, c: c, start: start, record: conv != "" && mode != history.Off}
	handedOff := false
	defer func() {
		if !handedOff {
			cancel()
			if x.release != nil {
				x.release()
			}
		}
	}()

	out := body
	if x.record {
		x.key = history.Key{Tenant: c.namespace, Conversation: conv}
		if out, err = x.prepare(ctx, req, mode); err != nil {
			s.fail(rc, "chat", c.cfg.ID, err, start)
			return
		}
		rc.Response.Header.Set("X-Recall-Conversation", conv)
		rc.Response.Header.Set("X-Recall-Context-Tokens", strconv.Itoa(x.report.Tokens))
		rc.Response.Header.Set(headerHistory, strconv.Itoa(x.report.IncludedTurns)+"/"+strconv.Itoa(x.report.StoredTurns))
		rc.Response.Header.Set("X-Recall-Curation", fmt.Sprintf("dropped_turns=%d truncated_tool_results=%d repaired_calls=%d",
			x.report.DroppedTurns, x.report.TruncatedToolResults, x.report.RepairedCalls))
		s.metrics.curated(c.cfg.ID, x.report)
	}

	var upBody io.Reader = bytesReader(out)
	if x.record {
		upBody = newPooledBody(out) // built by prepare from the pool
	}
	upReq, err := newUpstreamRequest(ctx, rc, c, path, upBody, int64(len(out)))
	if err != nil {
		s.fail(rc, "chat", c.cfg.ID, err, start)
		return
	}
	x.sent = s.cfg.Now()
	resp, err := s.client.Do(upReq)
	if err != nil {
		s.fail(rc, "chat", c.cfg.ID, upstreamErr(err), start)
		return
	}
	copyResponseHeader(rc, resp)
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if isEventStream(resp) {
		handedOff = true
		s.relayStream(ctx, cancel, rc, x, resp, ok && x.record)
		return
	}
	defer resp.Body.Close()
	raw, err := readLimited(resp.Body, s.cfg.MaxResponseBytes)
	upstreamDone := s.cfg.Now()
	if err != nil {
		s.fail(rc, "chat", c.cfg.ID, upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", err)), start)
		return
	}
	if ok && x.record {
		reply, err := parseBody(resp.Header.Get("Content-Encoding"), raw, s.cfg.MaxResponseBytes)
		if err != nil {
			s.fail(rc, "chat", c.cfg.ID, fmt.Errorf("%w: %w", errUpstreamBad, err), start)
			return
		}
		if err := x.commit(ctx, reply); err != nil {
			s.log.Error("commit failed", "tenant", c.cfg.ID, "conversation", conv, "error", err)
			s.metrics.commitFailed(c.cfg.ID)
			s.fail(rc, "chat", c.cfg.ID, fmt.Errorf("%w: %w", errCommitFailed, err), start)
			return
		}
	}
	rc.SetBody(raw)
	x.committed = ok && x.record
	x.done(resp.StatusCode, upstreamDone, nil)
}

// prepare loads the conversation, merges, curates, and returns the body to
// send upstream. It takes the conversation's lock, released by the caller
// through x.release.
func (x *exchange) prepare(ctx context.Context, req rewrite.Request, mode history.Mode) ([]byte, error) {
	s, c := x.s, x.c
	release, err := s.locks.acquire(ctx, x.key)
	if err != nil {
		return nil, errBusy
	}
	x.release = release

	x.oneChoice = req.N <= 1
	x.enc = tokens.ForModel(req.Model)
	if e := c.cfg.History.Encoding; e != "" {
		x.enc = tokens.Encoding(e)
	}
	budget := c.cfg.History.BudgetTokens
	if window, ok := tokens.Window(req.Model, c.cfg.History.ModelWindows); ok && window-req.MaxTokens < budget {
		budget = max(0, window-req.MaxTokens)
	}

	// The client's leading system/developer messages are its instructions:
	// sent first every time, never stored.
	n := 0
	for n < len(req.Messages) && (req.Messages[n].Role == rewrite.RoleSystem || req.Messages[n].Role == rewrite.RoleDeveloper) {
		n++
	}
	instructions, rest := req.Messages[:n], req.Messages[n:]
	fixed := tokens.ReplyPriming + s.cachedTokens(x.enc, req.Tools, true)
	for _, m := range instructions {
		fixed += s.cachedTokens(x.enc, m.Raw, false)
	}
	in := make([]history.Message, len(rest))
	for i, m := range rest {
		in[i] = history.Message{Role: m.Role, Raw: m.Raw, Hash: rewrite.Hash(m.Raw)}
	}

	loadStart := s.cfg.Now()
	snap, err := s.cfg.Store.Load(ctx, x.key, history.Query{
		MinMessages: len(in),
		Tokens:      budget,
		MaxTurns:    c.cfg.History.MaxTurns,
		FromCut:     true,
	})
	s.metrics.storeOp("load", s.cfg.Now().Sub(loadStart))
	if err != nil {
		s.log.Error("load failed", "tenant", c.cfg.ID, "conversation", x.key.Conversation, "error", err)
		return nil, errStore
	}
	merged, err := history.Merge(mode, in, snap, func(n int) ([]history.Message, error) {
		var head []history.Message
		err := s.cfg.Store.Messages(ctx, x.key, 0, false, func(m history.Message) bool {
			head = append(head, m)
			return len(head) < n
		})
		return head, err
	})
	if err != nil {
		s.log.Error("load failed", "tenant", c.cfg.ID, "conversation", x.key.Conversation, "error", err)
		return nil, errStore
	}
	x.version, x.super = snap.Meta.Version, merged.Supersede

	// New messages: counted once here, stored with their counts. The
	// current turn is sent whole; storage keeps long tool results cut.
	next := max(snap.Meta.NextSeq, 1)
	sendNew := make([]history.Message, len(merged.New))
	x.fresh = make([]history.Message, len(merged.New))
	for i, m := range merged.New {
		m.Seq = next + uint64(i)
		m.Tokens = s.counter.Message(x.enc, m.Raw)
		sendNew[i] = m
		if max := c.cfg.History.StoredToolResultChars; max > 0 && m.Role == history.RoleTool {
			if cut, ok := history.CutContent(m.Raw, max, history.StorageMarker); ok {
				m.Raw = cut
				m.Tokens = s.counter.Message(x.enc, cut)
			}
		}
		m.Raw = bytes.Clone(m.Raw) // the request body does not outlive the handler
		x.fresh[i] = m
	}

	cut := snap.Meta.Cut
	if x.super != nil && cut > x.super.Seq {
		cut = 0
	}
	w := history.NewWindow(merged.History, sendNew, cut, snap.Meta.Turns)
	w.Budget, w.Fixed = budget, fixed
	w.Count = func(raw []byte) int { return s.counter.Message(x.enc, raw) }
	sent, err := history.Curate(w, c.strategy)
	if err != nil {
		return nil, err
	}
	x.report = w.Report
	if w.Cut != snap.Meta.Cut {
		x.cut = w.Cut
	}

	msgs := make([][]byte, 0, len(instructions)+len(sent))
	for _, m := range instructions {
		msgs = append(msgs, m.Raw)
	}
	for _, m := range sent {
		msgs = append(msgs, m.Raw)
	}
	return req.AppendBody(getBodyBuf(len(req.Body)+w.Report.Tokens*4), msgs), nil
}

// parseBody reads the answer to record from a non-streamed body, decoding
// a copy if the upstream compressed it (the client gets the bytes as sent).
func parseBody(encoding string, raw []byte, limit int) (rewrite.Reply, error) {
	body, err := decode(encoding, raw, limit)
	if err != nil {
		return rewrite.Reply{}, err
	}
	return rewrite.ParseReply(body)
}

// commit writes the new messages and the answer as one atomic change.
func (x *exchange) commit(ctx context.Context, reply rewrite.Reply) error {
	s := x.s
	answer := history.Message{
		Role: history.RoleAssistant,
		Raw:  reply.Message,
		Hash: rewrite.Hash(reply.Message),
	}
	// The upstream already counted the answer: with one choice, its
	// completion tokens plus the message overhead are the count, exactly
	// and for free. Otherwise count it.
	if x.oneChoice && reply.Usage.CompletionTokens > 0 {
		answer.Tokens = reply.Usage.CompletionTokens + tokens.MessageOverhead
	} else {
		answer.Tokens = s.counter.Message(x.enc, reply.Message)
	}
	ch := history.Change{
		Version:          x.version,
		Supersede:        x.super,
		Append:           append(x.fresh, answer),
		Cut:              x.cut,
		Model:            reply.Model,
		ResponseID:       reply.ID,
		PromptTokens:     reply.Usage.PromptTokens,
		CompletionTokens: reply.Usage.CompletionTokens,
		Now:              s.cfg.Now().UnixNano(),
	}
	start := s.cfg.Now()
	_, err := s.cfg.Store.Commit(ctx, x.key, ch)
	s.metrics.storeOp("commit", s.cfg.Now().Sub(start))
	return err
}

// done logs the finished exchange and records its metrics.
func (x *exchange) done(status int, upstreamDone time.Time, err error) {
	s := x.s
	end := s.cfg.Now()
	total, upstream := end.Sub(x.start), upstreamDone.Sub(x.sent)
	s.metrics.request(x.c.cfg.ID, "chat", status)
	s.metrics.latency(x.c.cfg.ID, total, upstream)
	attrs := []any{"route", "chat", "tenant", x.c.cfg.ID, "status", status,
		"upstream_ms", ms(upstream), "overhead_ms", ms(total - upstream)}
	if x.record {
		attrs = append(attrs, "conversation", x.key.Conversation, "context_tokens", x.report.Tokens,
			"turns", strconv.Itoa(x.report.IncludedTurns)+"/"+strconv.Itoa(x.report.StoredTurns),
			"dropped_turns", x.report.DroppedTurns, "truncated_tool_results", x.report.TruncatedToolResults,
			"repaired_calls", x.report.RepairedCalls)
	}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	s.log.Info("request", attrs...)
	if s.cfg.OnExchangeDone != nil {
		s.cfg.OnExchangeDone(ExchangeDone{Tenant: x.c.cfg.ID, Conversation: x.key.Conversation,
			Status: status, Committed: x.committed, Err: err})
	}
}

// readBody reads a chat-completions body, bounded by MaxBodyBytes.
func (s *Server) readBody(rc *fasthttp.RequestCtx) ([]byte, error) {
	st := rc.RequestBodyStream()
	if st == nil {
		return rc.Request.Body(), nil
	}
	b, err := readLimited(st, s.cfg.MaxBodyBytes)
	if errors.Is(err, errTooLarge) {
		return nil, errBodyTooLarge
	}
	if err != nil {
		return nil, &apiError{status: 400, typ: "invalid_request_error", message: "Could not read the request body."}
	}
	return b, nil
}

func isEventStream(resp *http.Response) bool {
	ct := resp.Header.Get("Content-Type")
	return len(ct) >= 17 && ct[:17] == "text/event-stream"
}

var errTooLarge = errors.New("proxy: body too large")

// readLimited reads r whole, failing with errTooLarge past limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// fail answers err in OpenAI's shape, logs and counts it.
func (s *Server) fail(rc *fasthttp.RequestCtx, route, tenant string, err error, start time.Time) {
	e := classify(err)
	writeError(rc, e)
	s.metrics.request(tenant, route, e.status)
	level := slog.LevelInfo
	if e.status >= 500 {
		level = slog.LevelError
	}
	s.log.Log(context.Background(), level, "request", "route", route, "tenant", tenant, "status", e.status,
		"code", e.code, "overhead_ms", ms(s.cfg.Now().Sub(start)), "error", err.Error())
}
