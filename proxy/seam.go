package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/thread"
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
	x := &exchange{s: s, facts: pipeline.Record{Start: s.startOf(rc)}, render: p.render, route: p.route}
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
		a.Created = x.facts.Start.Unix()
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

// commitAnswer records the new messages and the answer (its stored form,
// see stamp).
func (x *exchange) commitAnswer(a *wire.Answer) error {
	msgs, err := pipeline.AnswerMessages(a, x.s.counter, x.dec.Encoding, x.oneChoice, x.upstream)
	if err != nil {
		return err
	}
	id := a.ID
	if a.ResponseID != "" {
		id = a.ResponseID
	}
	return x.record1(recorded{answer: msgs, model: a.Model, id: id, stop: a.Stop, response: x.responseOf(a),
		prompt: a.Usage.InputTokens, completion: a.Usage.OutputTokens, cached: a.Usage.CachedTokens,
		created: a.Usage.CacheCreationTokens, upstream: x.upstream})
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
func (s *Server) relaySeam(ctx context.Context, res pipeline.Owned, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response,
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
			x.facts.UpstreamDone = x.now()
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
	a, err := pipeline.Pump(r, up.upstream.NewAssembler(), s.cfg.MaxResponseBytes, same, func(raw []byte, deltas []wire.Delta, last bool) error {
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
	x.facts.UpstreamDone = x.now()
	var ue *pipeline.UpstreamEvent
	switch {
	case errors.As(err, &ue) && same && !holding:
		// The upstream's own error event reaches the client as it came.
		if werr := writeFlush(w, ue.Raw); werr != nil {
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
		req.Created = x.facts.Start.Unix()
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
