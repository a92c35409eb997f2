package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/wire"
)

// target is the conversation the request names (see conversation) and
// the history mode it asks for (X-Recall-History, else the tenant's).
func (x *exchange) target(rc *fasthttp.RequestCtx, conv string) (string, history.Mode, error) {
	conv, err := x.conversation(rc, conv)
	if err != nil {
		return "", "", err
	}
	mode, err := x.historyMode(rc)
	if err != nil {
		return "", "", err
	}
	return conv, mode, nil
}

// historyMode is the history mode the request asks for: X-Recall-History,
// else the tenant's; apierr.BadHistoryMode for a header that names none.
func (x *exchange) historyMode(rc *fasthttp.RequestCtx) (history.Mode, error) {
	h := rc.Request.Header.PeekCanonical(keyHistory)
	if len(h) == 0 {
		return x.c.mode, nil
	}
	mode, err := history.ParseMode(string(h))
	if err != nil {
		return "", apierr.BadHistoryMode
	}
	return mode, nil
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

// stamp stamps a (pipeline.Stamp): the exchange's start is its time
// unless the request named one, now its completion.
func (x *exchange) stamp(a *wire.Answer, req *wire.Request, up, in wire.Protocol) error {
	return pipeline.Stamp(a, req, up, in, x.rec.Start, x.now())
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
// The relay goroutine owns x and resp from here on (see relay).
func (s *Server) relaySeam(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response,
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
	s.relay(ctx, rc, x, resp, func(w *bufio.Writer, upstream io.Reader) error {
		if !ok && same { // the upstream's error, in the client's protocol already
			_, err := relayRaw(w, upstream)
			x.rec.UpstreamDone = x.now()
			if err != nil {
				return fmt.Errorf("%w: %w", pipeline.ErrClientGone, err)
			}
			return nil
		}
		if enc != "" {
			var err error
			if upstream, err = pipeline.Decoder(enc, upstream); err != nil {
				return fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
			}
		}
		var ren wire.Renderer
		if !same {
			ren = newRenderer(x, p, req)
			x.storeFrom(ren, req)
		}
		return pipeline.Stream(w, upstream, x, up.upstream.NewAssembler(), s.cfg.MaxResponseBytes, ren, same, record)
	})
}

// newRenderer returns the renderer of req's streamed answer, its time
// the exchange's start unless the ingress named it already.
func newRenderer(x *exchange, p *protocol, req *wire.Request) wire.Renderer {
	if req.Created == 0 {
		req.Created = x.rec.Start.Unix()
	}
	return p.ingress.NewRenderer(req)
}

// The exchange as the pipeline's render stage sees it (pipeline.Exchange):
// x.in, x.up and x.req are set once the request is decoded.

// Stamp gives a its id, times and stored form (stamp).
func (x *exchange) Stamp(a *wire.Answer) error { return x.stamp(a, x.req, x.up.proto, x.in.proto) }

// Commit records the turn with the answer a (commitAnswer).
func (x *exchange) Commit(a *wire.Answer) error {
	if err := x.commitAnswer(a); err != nil {
		return err
	}
	x.life.committed = true
	return nil
}

// UpstreamDone notes the time the upstream's answer ended.
func (x *exchange) UpstreamDone() { x.rec.UpstreamDone = x.now() }

// Left fails if a stream's client left before the commit
// (leftBeforeCommit).
func (x *exchange) Left() error { return x.leftBeforeCommit() }

// Committing lets a stream's headers wait for its end (holdHeaders): the
// relay calls it once, before the commit.
func (x *exchange) Committing() {
	if x.life.answered != nil {
		close(x.life.answered)
		x.life.answered = nil
	}
}

// ErrorEvent is err as an error event in the client's protocol, ren's
// when it renders one (ren is nil when the upstream's events are relayed
// as they came).
func (x *exchange) ErrorEvent(ren wire.Renderer, err error) []byte {
	e := classify(err)
	if er, ok := ren.(wire.ErrorRenderer); ok {
		return er.Error(nil, e.Code, e.Message)
	}
	return x.in.errorEvent(e)
}

// client is a request's connection as the render stage writes a whole
// answer to it (pipeline.Client).
type client struct{ rc *fasthttp.RequestCtx }

// Relayed answers the upstream's body as it came.
func (c client) Relayed(body []byte) { c.rc.Response.SetBodyRaw(body) }

// Rendered answers a JSON body Recall rendered, without the upstream's
// encoding and length.
func (c client) Rendered(body []byte) {
	c.rc.Response.Header.Del("Content-Encoding")
	c.rc.Response.Header.Del("Content-Length")
	c.rc.SetContentType("application/json")
	c.rc.Response.SetBodyRaw(body)
}

// Gone reports whether the client has closed its connection.
func (c client) Gone() bool { return clientGone(c.rc.Conn()) }
