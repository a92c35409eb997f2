package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// serveSeam serves a request of ingress protocol in (its route's) through
// the protocol seam: decode with the ingress, plan as every protocol does,
// encode the context for the tenant's upstream protocol, and render the
// answer back in the client's protocol. When the upstream speaks the
// client's protocol, its bytes are relayed as they came (the Responses API
// aside: its answers carry Recall's ids, which hold its state).
//
// Every call ends in exactly one x.done or x.fail.
func (s *Server) serveSeam(rc *fasthttp.RequestCtx, conv string, p *protocol) {
	x := &exchange{s: s, facts: exchangeFacts{start: s.startOf(rc)}, render: p.render, route: p.route}
	x.key.Conversation = conv
	if body, ok := s.admit(rc, x); ok {
		s.seamExchange(rc, x, body, conv, p)
	}
}

// seamExchange is serveSeam once the caller is known (x.c): the chat
// route hands it a chat request whose tenant's upstream speaks another
// protocol.
func (s *Server) seamExchange(rc *fasthttp.RequestCtx, x *exchange, body []byte, conv string, p *protocol) {
	conv, mode, err := x.target(rc, conv)
	if err != nil {
		x.fail(rc, err)
		return
	}
	s.serveExchange(rc, x, body, conv, mode, p)
}

// target is the conversation the request names (see conversation) and
// the history mode it asks for (X-Recall-History, else the tenant's).
func (x *exchange) target(rc *fasthttp.RequestCtx, conv string) (string, history.Mode, error) {
	conv, err := x.conversation(rc, conv)
	if err != nil {
		return "", "", err
	}
	mode := x.c.mode
	if h := rc.Request.Header.PeekCanonical(keyHistory); len(h) > 0 {
		if mode, err = history.ParseMode(string(h)); err != nil {
			return "", "", apierr.BadHistoryMode
		}
	}
	return conv, mode, nil
}

// parseRequest decodes body with p's ingress, and the path it came to
// for an ingress that reads fields from it (wire.PathIngress).
func parseRequest(rc *fasthttp.RequestCtx, p *protocol, body []byte) (*wire.Request, error) {
	if p.pathIngress != nil {
		_, path, _ := routePath(rc.Request.URI().PathOriginal())
		return p.pathIngress.ParseRequestAt(path, body)
	}
	return p.ingress.ParseRequest(body)
}

// sideOf reports whether err is the plan's finding that the request is a
// side call, and why.
func sideOf(err error) (string, bool) {
	if err != nil {
		var se *plan.SideError // allocated only here
		if errors.As(err, &se) {
			return se.Reason, true
		}
	}
	return "", false
}

// sameRaw reports whether a and b are the same values in the same
// memory: messages sent as the request holds them.
func sameRaw(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || len(a[i]) > 0 && &a[i][0] != &b[i][0] {
			return false
		}
	}
	return true
}

// stamp gives the answer Recall's id and times (Completed is now), and
// puts its stored form in the protocol the client received it in: the
// upstream's when the client speaks it, else the client's (the canonical
// answer encoded by its codec; the upstream's Settings, in its protocol,
// are dropped). What is stored, what the client is answered and what a
// stored response renders later are then the same items, and a client
// that resends its history resends what is stored, which the merge
// recognises. A provider's opaque pieces (signed thinking, encrypted
// reasoning) are then not kept: only a client of that provider's
// protocol could send them back.
func (x *exchange) stamp(a *wire.Answer, req *wire.Request, up, in wire.Protocol) error {
	a.Protocol = up
	if req.ResponseID != "" {
		a.ResponseID, a.Created = req.ResponseID, req.Created
	}
	if a.Created == 0 {
		a.Created = x.facts.start.Unix()
	}
	a.Completed = x.now().Unix()
	if in != up {
		stored, err := wire.For(in).Encode(nil, []wire.Message{a.Message})
		if err != nil {
			return fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
		}
		a.Stored, a.Protocol, a.Settings = stored, in, nil
	}
	return nil
}

// inPlace returns the planned messages with the request's in-place
// instructions (wire.Request.InPlace: never stored, never merged) put back
// where the client placed them: right after the planned copy of the
// message the client sent before each (found by hash, from the end), at
// the start of the conversation for one the client sent first, or before
// the first new message when that message was not sent (curated out).
func inPlace(planned []plan.Message, p wire.Protocol, req *wire.Request) []plan.Message {
	if len(req.InPlace) == 0 {
		return planned
	}
	codec := wire.For(p)
	out := append([]plan.Message(nil), planned...)
	lastPrev, lastAt := -2, 0
	for _, idx := range req.InPlace {
		prev := idx - 1
		for prev >= 0 && slices.Contains(req.InPlace, prev) {
			prev--
		}
		at := -1
		switch {
		case prev == lastPrev: // after the one placed before it
			at = lastAt + 1
		case prev < 0:
			at = 0
			for at < len(out) && (out[at].Kind == plan.Instruction || out[at].Kind == plan.SummaryMessage) {
				at++
			}
		default:
			want := codec.Hash(req.Messages[prev])
			for i := len(out) - 1; i >= 0 && at < 0; i-- {
				if out[i].Kind == plan.History || out[i].Kind == plan.New {
					if wire.For(out[i].Protocol).Hash(out[i].Raw) == want {
						at = i + 1
					}
				}
			}
		}
		if at < 0 {
			at = len(out)
			for i, m := range out {
				if m.Kind == plan.New {
					at = i
					break
				}
			}
		}
		m := plan.Message{Kind: plan.New, Role: wire.RoleSystem, Protocol: p, Raw: req.Messages[idx]}
		out = slices.Insert(out, at, m)
		lastPrev, lastAt = prev, at
	}
	return out
}

// seamThread is a request of any protocol as package thread reads it:
// its tools, its instructions, its newest message.
func seamThread(x *exchange, rc *fasthttp.RequestCtx, req *wire.Request) *thread.Request {
	t := &x.th
	*t = thread.Request{Header: threadHeader(rc), Tools: hasTools(req.ToolsRaw), Chained: req.PreviousResponseID != "", Instructions: append(x.instr[:0], req.Instructions...)}
	if n := len(req.Messages); n > 0 {
		t.Last = req.Messages[n-1]
	}
	return t
}

// turnOf reads a decoded request's instructions and conversation messages
// into their stored form, through the ingress protocol's codec.
func turnOf(p wire.Protocol, req *wire.Request) (instructions, in []history.Message, err error) {
	codec := wire.For(p)
	ni := len(req.Instructions)
	all := make([]history.Message, ni, ni+len(req.Messages)) // one array for both
	for i, raw := range req.Instructions {
		all[i] = history.Message{Role: codec.Role(raw), Protocol: p, Raw: raw}
	}
	instructions, in = all[:ni:ni], all[ni:]
	for i, raw := range req.Messages {
		if slices.Contains(req.InPlace, i) {
			continue // sent where it stands, never stored
		}
		role := codec.Role(raw)
		if role == "" {
			return nil, nil, apierr.InvalidValue("messages["+strconv.Itoa(i)+"]", "Message "+strconv.Itoa(i)+" is not a message Recall can read.")
		}
		in = append(in, history.Message{Role: role, Protocol: p, Raw: raw, Hash: codec.Hash(raw)})
	}
	return instructions, in, nil
}

// encodePlan returns the planned messages in the upstream's protocol,
// instructions (and the summary) apart from the conversation. Each of the
// two goes as stored when every message of it is in the upstream's
// protocol; when any is not, that part goes through the canonical model,
// so the upstream's codec shapes every turn by its rules (Anthropic's
// alternation, chat's tool messages). The summary, a chat message, thus
// leaves a conversation in the upstream's protocol as stored: its bytes
// do not change when a summary appears (the upstream's prompt cache keeps
// them), and a long context is not decoded and encoded again on every
// request. asStored reports that the conversation's messages went as
// they were stored.
func encodePlan(up wire.Protocol, msgs []plan.Message) (instr, conv [][]byte, asStored bool, err error) {
	n := 0
	for n < len(msgs) && (msgs[n].Kind == plan.Instruction || msgs[n].Kind == plan.SummaryMessage) {
		n++
	}
	all := make([][]byte, len(msgs)) // one array for both, when they go as stored
	if instr, _, err = appendEncoded(all[:0:n], up, msgs[:n]); err != nil {
		return nil, nil, false, err
	}
	if conv, asStored, err = appendEncoded(all[n:n], up, msgs[n:]); err != nil {
		return nil, nil, false, err
	}
	return instr, conv, asStored, nil
}

// appendEncoded appends msgs in protocol up to dst: as stored (reporting
// so) when every one is in it, else all of them through the canonical
// model and up's codec.
func appendEncoded(dst [][]byte, up wire.Protocol, msgs []plan.Message) ([][]byte, bool, error) {
	same := true
	for _, m := range msgs {
		same = same && m.Protocol == up
	}
	if same {
		for _, m := range msgs {
			dst = append(dst, m.Raw)
		}
		return dst, true, nil
	}
	canon := make([]wire.Message, 0, len(msgs))
	for _, m := range msgs {
		cm, err := wire.For(m.Protocol).Decode(m.Raw)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %w", apierr.Internal, err)
		}
		canon = append(canon, cm)
	}
	dst, err := wire.For(up).Encode(dst, canon)
	return dst, false, err
}

// commitAnswer records the new messages and the answer (its stored form,
// see stamp).
func (x *exchange) commitAnswer(a *wire.Answer) error {
	stored, proto := a.Stored, a.Protocol
	codec := wire.For(proto)
	msgs := make([]history.Message, 0, len(stored))
	for _, raw := range stored {
		role := codec.Role(raw)
		if role == "" {
			role = wire.RoleAssistant
		}
		msgs = append(msgs, history.Message{Role: role, Protocol: proto, Raw: raw, Hash: codec.Hash(raw)})
	}
	// The upstream already counted a one-message answer to a request for
	// one choice: its output tokens plus the message overhead are the
	// count, exactly and for free. Otherwise count it.
	if len(msgs) == 1 && x.oneChoice && a.Usage.OutputTokens > 0 && proto == x.upstream {
		msgs[0].Tokens = a.Usage.OutputTokens + tokens.MessageOverhead
	} else {
		for i := range msgs {
			msgs[i].Tokens = plan.Count(x.s.counter, x.dec.Encoding, proto, msgs[i].Raw)
		}
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%w: the answer has nothing to record", apierr.UpstreamBadResponse)
	}
	id := a.ID
	if a.ResponseID != "" {
		id = a.ResponseID
	}
	return x.record1(recorded{answer: msgs, model: a.Model, id: id, stop: a.Stop, response: x.responseOf(a),
		prompt: a.Usage.InputTokens, completion: a.Usage.OutputTokens, cached: a.Usage.CachedTokens,
		created: a.Usage.CacheCreationTokens, upstream: x.upstream})
}

// upstreamStatus is an upstream's error answer as the catalogue entry the
// client gets, with the upstream's own message when it gave one.
func upstreamStatus(status int, body []byte) *apierr.Error {
	msg := gjson.GetBytes(body, "error.message").String()
	if msg == "" {
		msg = "The upstream answered " + strconv.Itoa(status) + "."
	}
	code := ""
	switch {
	case status == 401 || status == 403:
		code = "invalid_api_key"
	case status == 429:
		code = "rate_limit_exceeded"
	}
	return &apierr.Error{Status: status, Type: apierrType(status), Code: code, Message: msg}
}

// apierrType is OpenAI's error type for a status.
func apierrType(status int) string {
	switch {
	case status == 401 || status == 403:
		return "authentication_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// relaySeam relays a streamed answer through the seam. With same set the
// upstream's events are relayed as they came and the one that carries the
// stop reason is held, with every later one, until the turn is committed;
// otherwise the upstream's events are read into canonical deltas and
// rendered in the client's protocol, its closing events (End) written once
// the turn is committed. If the turn cannot be committed the client never
// gets the closing events: the stream ends with an error event instead.
//
// It owns resp and res from here on, like relayStream.
func (s *Server) relaySeam(ctx context.Context, res owned, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response,
	p *protocol, up *protocol, req *wire.Request, same, ok bool) {
	rc.Response.Header.Del("Content-Length")
	if !same {
		rc.SetContentType("text/event-stream")
	}
	enc := string(resp.Header.ContentEncoding())
	if enc == "identity" {
		enc = ""
	}
	record := ok && x.record
	if record && enc != "" {
		rc.Response.Header.Del("Content-Encoding")
	}
	s.relay(ctx, res, rc, x, resp, func(w *bufio.Writer, upstream io.Reader) error {
		if !ok && same { // the upstream's error, in the client's protocol already
			_, err := relayRaw(w, upstream)
			x.facts.upstreamDone = x.now()
			if err != nil {
				return fmt.Errorf("%w: %w", errClientGone, err)
			}
			return nil
		}
		if enc != "" {
			var err error
			if upstream, err = decoder(enc, upstream); err != nil {
				return fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
			}
		}
		return s.relaySeamEvents(w, upstream, x, p, up, req, same, record)
	})
}

// relaySeamEvents is relaySeam's reading, relaying and commit: the
// pump's events relayed as they came (same), the one that finishes the
// answer and every later one held until the commit, or rendered in the
// client's protocol, the closing events once committed.
func (s *Server) relaySeamEvents(w *bufio.Writer, r io.Reader, x *exchange, p, up *protocol, req *wire.Request, same, record bool) error {
	var ren wire.Renderer
	if !same {
		ren = newRenderer(x, p, req)
	}
	var held, out []byte
	holding := false
	a, err := pump(r, up.upstream.NewAssembler(), s.cfg.MaxResponseBytes, same, func(raw []byte, deltas []wire.Delta, last bool) error {
		if !same {
			out = out[:0]
			for _, d := range deltas {
				out = ren.Delta(out, d)
			}
			return writeFlush(w, out)
		}
		holding = holding || record && last
		for _, d := range deltas {
			holding = holding || record && d.Kind == wire.Finish
		}
		if holding {
			held = append(held, raw...)
			return nil
		}
		return writeFlush(w, raw)
	})
	x.facts.upstreamDone = x.now()
	var ue *upstreamEvent
	switch {
	case errors.As(err, &ue) && same && !holding:
		// The upstream's own error event reaches the client as it came.
		if werr := writeFlush(w, ue.raw); werr != nil {
			return werr
		}
		return fmt.Errorf("%w: %w", errErrorEventRelayed, err)
	case errors.Is(err, errClientGone):
		return err
	case err != nil:
		return s.endSeam(w, x, p, ren, err)
	}
	if err := x.stamp(&a, req, up.proto, p.proto); err != nil {
		return s.endSeam(w, x, p, ren, err)
	}
	if record {
		if err := x.leftBeforeCommit(); err != nil {
			return err
		}
		if err := x.commitAnswer(&a); err != nil {
			return s.endSeam(w, x, p, ren, err)
		}
		x.committed = true
	}
	if same {
		return writeFlush(w, held)
	}
	return writeFlush(w, ren.End(nil, &a))
}

// newRenderer returns the renderer of req's streamed answer, its time
// the exchange's start unless the ingress named it already.
func newRenderer(x *exchange, p *protocol, req *wire.Request) wire.Renderer {
	if req.Created == 0 {
		req.Created = x.facts.start.Unix()
	}
	return p.ingress.NewRenderer(req)
}

// endSeam ends a stream that failed with an error event in the client's
// protocol, ren's when it renders one (ren is nil when the upstream's
// events are relayed as they came); the closing events never go out.
func (s *Server) endSeam(w *bufio.Writer, x *exchange, p *protocol, ren wire.Renderer, err error) error {
	e := classify(err)
	var ev []byte
	if er, ok := ren.(wire.ErrorRenderer); ok {
		ev = er.Error(nil, e.Code, e.Message)
	} else {
		ev = p.errorEvent(e)
	}
	if _, werr := w.Write(ev); werr != nil {
		return fmt.Errorf("%w (%w: %w)", err, errClientGone, werr)
	}
	return err
}
