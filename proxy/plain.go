package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/uplink"
)

// forward serves a chat-completions call that records nothing (no
// conversation named, or memory off for it): the client's body goes
// upstream as it came, and the answer comes back as the upstream sent it.
// It is the proxy-ceiling path (DESIGN.md section 9: at least 0.9x a bare
// fasthttp proxy's requests/s), so it does only what a forward needs: no
// deadline context unless the answer streams, no exchange record, and the
// answer read straight into the client response's pooled body (read
// whole by the buffering client when the request asked for no stream).
// It reports whether a stream's relay goroutine took x (and ends it
// later); otherwise x has ended when forward returns.
func (s *Server) forward(rc *fasthttp.RequestCtx, x *exchange, body, path []byte, stream bool) (relayed bool) {
	c := x.c
	upReq := fasthttp.AcquireRequest()
	upstreamRequest(upReq, rc, c, path, false)
	upReq.SetBodyRaw(body)
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	x.rec.Sent = x.now()
	deadline := x.rec.Sent.Add(c.timeout())
	client := s.client
	if !stream {
		client = s.buffered
	}
	err := uplink.Do(client, upReq, resp, c.timeout())
	fasthttp.ReleaseRequest(upReq)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			err = fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err)
		} else {
			err = upstreamErr(err)
		}
		x.fail(rc, err)
		return false
	}
	return s.relayAnswer(rc, x, resp, deadline)
}

// relayAnswer relays an answer that records nothing as it came: its
// status and headers, then an event stream by a relay goroutine of its
// own, which ends x (bounded by deadline, and by the stream idle
// timeout), or a whole body read into the client's response, bounded by
// MaxResponseBytes, which ends x here. It releases resp, and reports
// whether the relay took x.
func (s *Server) relayAnswer(rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response, deadline time.Time) (relayed bool) {
	uplink.CopyResponseHeader(rc, resp)
	status := resp.StatusCode()
	if uplink.IsEventStream(resp) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		x.life.own.Cancel = cancel
		s.relayStream(ctx, rc, x, resp)
		return true
	}
	var err error
	if resp.BodyStream() == nil { // read whole (the buffering client)
		if len(resp.Body()) > s.cfg.MaxResponseBytes {
			err = pipeline.ErrTooLarge
		} else {
			rc.Response.AppendBody(resp.Body())
		}
	} else {
		err = appendBody(&rc.Response, uplink.Body(resp), s.cfg.MaxResponseBytes)
	}
	uplink.Release(resp)
	if err != nil {
		if errors.Is(err, pipeline.ErrTooLarge) {
			err = fmt.Errorf("%w: read upstream answer: %w", apierr.UpstreamTooLarge, err)
		} else {
			err = upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", err))
		}
		x.fail(rc, err)
		return false
	}
	x.done(status, nil) // the answer's end is the exchange's: upstreamDone is done's clock
	return false
}

// copyBufs recycles the buffers appendBody reads through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// appendBody reads r to its end into dst's body, failing with pipeline.ErrTooLarge
// past limit bytes. It does not allocate once dst's pooled body has grown
// to the answers' size.
func appendBody(dst *fasthttp.Response, r io.Reader, limit int) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf, n := *bp, 0
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if n += k; n > limit {
				return pipeline.ErrTooLarge
			}
			dst.AppendBody(buf[:k])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
