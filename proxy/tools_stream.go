package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

// toolStream serves a streamed tool exchange: every round is streamed
// upstream and its events are read into canonical deltas and rendered
// into the one stream the client reads (one message_start, one
// response.created, one chat completion id). Text is relayed as it comes
// and stays relayed; a call of Recall's tools is never relayed (its
// deltas are dropped as soon as its name is known), so a round that
// calls only Recall's tools shows the client its text, if any, and
// nothing else; the client's calls are relayed numbered as the client
// sees them. No round's finish reaches the client: the stream's closing
// events are rendered from the final answer once the turn is committed,
// so the acknowledgement rule holds as for any stream. Reasoning is not
// relayed (a client could not send it back as it was signed); it is
// stored with its round.
//
// The first round's request is made here, so that its failure is an
// error answer with the upstream's status; later rounds are made by the
// relay goroutine, which owns the exchange from then on, from a copy of
// the request's headers (it never touches rc). It reports whether it
// handed the exchange to the relay.
func (s *Server) toolStream(ctx context.Context, rc *fasthttp.RequestCtx, l *toolLoop) (relayed bool) {
	x := l.x
	tmpl := fasthttp.AcquireRequest()
	l.request(tmpl, rc)
	resp, err := s.streamRound(ctx, l, tmpl)
	if err != nil {
		fasthttp.ReleaseRequest(tmpl)
		s.metrics.ToolRounds(x.c.cfg.ID, len(x.rec.rounds))
		x.fail(rc, err)
		return false
	}
	uplink.CopyResponseHeader(rc, resp)
	rc.Response.Header.Del("Content-Encoding")
	rc.Response.Header.Del("Content-Length")
	rc.SetContentType("text/event-stream")
	enc, stream := encodingOf(resp), uplink.IsEventStream(resp)
	s.relay(ctx, rc, x, resp, func(w *bufio.Writer, body io.Reader) error {
		defer fasthttp.ReleaseRequest(tmpl)
		err := s.toolRelay(ctx, w, body, enc, stream, l, tmpl)
		s.metrics.ToolRounds(x.c.cfg.ID, len(x.rec.rounds))
		return err
	})
	return true
}

// encodingOf is resp's content encoding ("" for none).
func encodingOf(resp *fasthttp.Response) string {
	enc := string(resp.Header.ContentEncoding())
	if enc == "identity" {
		return ""
	}
	return enc
}

// streamRound sends the next round's request, asking for a stream, and
// returns the upstream's answer once its headers are read: a 2xx the
// caller owns, or the upstream's error.
func (s *Server) streamRound(ctx context.Context, l *toolLoop, tmpl *fasthttp.Request) (*fasthttp.Response, error) {
	x := l.x
	out, err := l.body(true)
	if err != nil {
		return nil, err
	}
	upReq := fasthttp.AcquireRequest()
	tmpl.CopyTo(upReq)
	upReq.SetBodyRaw(out)
	var round pipeline.Round
	resp, err := x.call(ctx, upReq, &round)
	if err != nil {
		return nil, err
	}
	round.Stream = uplink.IsEventStream(resp)
	x.rec.rounds = append(x.rec.rounds, round)
	if status := resp.StatusCode(); status < 200 || status >= 300 {
		raw, _ := pipeline.ReadLimited(uplink.Body(resp), 1<<20)
		x.learnWindow(status, string(resp.Header.ContentEncoding()), raw)
		uplink.Release(resp)
		x.rec.UpstreamDone = s.cfg.Now()
		x.rec.rounds[len(x.rec.rounds)-1].Done = x.rec.UpstreamDone
		return nil, pipeline.UpstreamStatus(status, raw)
	}
	return resp, nil
}

// toolRelay is toolStream's relay: it reads the first round's answer
// from body, and every later round's from its own request, until the
// final answer, commits the turn, and writes the stream's closing events.
func (s *Server) toolRelay(ctx context.Context, w *bufio.Writer, body io.Reader, enc string, stream bool,
	l *toolLoop, tmpl *fasthttp.Request) error {
	x := l.x
	ren := newRenderer(x, l.p, l.req)
	f := &pipeline.RoundFilter{Offered: l.Offered}
	fail := func(err error) error {
		if errors.Is(err, pipeline.ErrClientGone) {
			return err
		}
		return pipeline.EndStream(w, x, ren, err)
	}
	var relayed strings.Builder // text the client got in rounds before the final
	release := func() {}        // the first round's body is relay's
	defer func() { release() }()
	for {
		a, err := pipeline.ReadRound(w, body, enc, stream, l.up.upstream, s.cfg.MaxResponseBytes, ren, f)
		release()
		release = func() {}
		x.rec.UpstreamDone = s.cfg.Now()
		rd := &x.rec.rounds[len(x.rec.rounds)-1]
		rd.Done, rd.Model, rd.Usage = x.rec.UpstreamDone, a.Model, a.Usage
		if err != nil {
			return fail(err)
		}
		more, err := l.step(ctx, &a)
		if err != nil {
			return fail(err)
		}
		if !more {
			if l.Limited {
				relayed.WriteString(f.Text.String())
			}
			return s.endTools(w, l, ren, f, a, relayed.String(), fail)
		}
		relayed.WriteString(f.Text.String())
		f.NextRound()
		resp, err := s.streamRound(ctx, l, tmpl)
		if err != nil {
			return fail(err)
		}
		enc, stream = encodingOf(resp), uplink.IsEventStream(resp)
		body, release = s.roundBody(ctx, resp)
	}
}

// endTools commits the turn whose final answer is a and writes the
// stream's closing events, rendered from the answer as the client holds
// it (relayed: the text it got in earlier rounds). The final answer of
// a round-bounded exchange was never streamed: its text is rendered
// first.
func (s *Server) endTools(w *bufio.Writer, l *toolLoop, ren wire.Renderer, f *pipeline.RoundFilter, a wire.Answer, relayed string,
	fail func(error) error) error {
	x := l.x
	var out []byte
	if l.Limited {
		out = f.Render(out, ren, wire.Delta{Kind: wire.TextDelta, Text: pipeline.RoundsLimitText})
	}
	turn, client, err := l.finish(a, relayed)
	if err != nil {
		return fail(err)
	}
	return pipeline.CommitStream(w, x, toolCommit{l: l, turn: turn, streamed: true}, ren, &client, out)
}

// roundBody returns the body of a later round's answer, bounded as
// relay bounds the first's: a read that waits on the upstream for
// StreamIdleTimeout, or past the exchange's deadline, is interrupted.
// release ends that and closes the response.
func (s *Server) roundBody(ctx context.Context, resp *fasthttp.Response) (body io.Reader, release func()) {
	up := newUpstreamStream(resp)
	return pipeline.Bound(ctx, &up, s.cfg.StreamIdleTimeout)
}
