package proxy

import (
	"bufio"
	"io"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/uplink"
)

// passthrough forwards any other /v1/ call untouched, with the same
// authentication and key swap, streaming the request and response bodies.
// conv is the conversation a /c/{conversation}/ prefix named, if any: no
// memory applies here, and the answer says so (memoryNone).
func (s *Server) passthrough(rc *fasthttp.RequestCtx, conv string, path []byte) {
	start := s.cfg.Now()
	c, err := s.authenticate(rc)
	if err != nil {
		rc.SetConnectionClose() // the body is not read
		s.fail(rc, "passthrough", "", err, start)
		return
	}
	named := conv != "" || len(rc.Request.Header.PeekCanonical(c.convKey)) > 0
	req := fasthttp.AcquireRequest()
	upstreamRequest(req, rc, c, path, uplink.Bodyless(rc))
	st, size, b, err := requestBody(rc)
	if err != nil {
		fasthttp.ReleaseRequest(req)
		rc.SetConnectionClose()
		s.fail(rc, "passthrough", c.cfg.ID, apierr.BadBody, start)
		return
	}
	switch {
	case st != nil:
		req.SetBodyStream(st, int(size)) // -1: sent chunked
	case b != nil:
		req.SetBodyRaw(b) // whole: sent again if a closed connection takes it (uplink.Do)
	}
	resp := fasthttp.AcquireResponse()
	resp.Header.SetNoDefaultContentType(true)
	// Do returns once the upload is sent and the answer's headers are
	// read: nothing reads the handler's body after it.
	err = uplink.Do(s.client, req, resp, c.timeout())
	fasthttp.ReleaseRequest(req)
	if b != nil && st == nil && rc.RequestBodyStream() != nil {
		putReadBuf(b) // read from the stream into a buffer of readPool
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		s.fail(rc, "passthrough", c.cfg.ID, upstreamErr(err), start)
		return
	}
	uplink.CopyResponseHeader(rc, resp)
	if named {
		s.memoryNone(rc, c.cfg.ID, path)
	}
	upstreamAt := s.cfg.Now()
	status, length, body := resp.StatusCode(), resp.Header.ContentLength(), uplink.Body(resp)
	s.metrics.CountRequest(c.cfg.ID, "passthrough", status)
	s.inflight.Add(1)
	s.busy.Add(1)
	rc.Response.ImmediateHeaderFlush = true
	// The writer may start at once: resp is its alone from here.
	rc.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.inflight.Done()
		defer s.busy.Add(-1)
		defer uplink.Release(resp)
		defer recoverStream(s.log)
		n, err := relayRaw(w, body)
		attrs := []any{"route", "passthrough", "tenant", c.cfg.ID, "status", status,
			"bytes", n, "upstream_ms", ms(upstreamAt.Sub(start))}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		s.log.Info("request", attrs...)
	})
	if length >= 0 {
		// Keep the upstream's framing (SetBodyStreamWriter has just set
		// "chunked"): the client learns the length, the point of a HEAD,
		// and an answer cut short cannot pass for a whole one.
		rc.Response.Header.SetContentLength(length)
	}
}

// requestBody returns the client's request body: a stream and its
// length, -1 when it is chunked, or the whole body: the one the server
// read, or one of a declared length up to resendableBody read from the
// stream into a buffer of readPool (a body in hand can be sent again, see
// uplink.Do). A request that declares neither a length nor chunked
// framing has no body (RFC 9112 section 6.3): like httputil, it is
// forwarded without one.
func requestBody(rc *fasthttp.RequestCtx) (io.Reader, int64, []byte, error) {
	size := int64(rc.Request.Header.ContentLength())
	if size == 0 || size < -1 {
		return nil, 0, nil, nil
	}
	if st := rc.RequestBodyStream(); st != nil {
		if size > 0 && size <= resendableBody {
			b := getReadBuf(int(size))[:size]
			if _, err := io.ReadFull(st, b); err != nil {
				putReadBuf(b)
				return nil, 0, nil, err
			}
			return nil, 0, b, nil
		}
		// Without its Close: the server owns the stream, and the upstream
		// request would close it when released.
		return struct{ io.Reader }{st}, size, nil, nil
	}
	if b := rc.Request.Body(); len(b) > 0 {
		return nil, 0, b, nil
	}
	return nil, 0, nil, nil
}

// resendableBody is the largest body passed through that is read whole
// before it is sent; a larger one is streamed to the upstream as it
// comes.
const resendableBody = 64 << 10

// relayRaw copies r to w, flushing after every read so bytes reach the
// client as they arrive. It stops at the first read or write error.
func relayRaw(w *bufio.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if _, werr := w.Write(buf[:k]); werr != nil {
				return n, werr
			}
			if werr := w.Flush(); werr != nil {
				return n, werr
			}
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// memoryNone marks the answer to a request that named a conversation on a
// path that keeps no memory (anything but the routes with memory): the
// header X-Recall-Memory: none, and a warning in the log, at most one a
// minute, so that a client expecting memory learns why it has none.
func (s *Server) memoryNone(rc *fasthttp.RequestCtx, tenant string, path []byte) {
	rc.Response.Header.Set(headerMemory, "none")
	now := s.cfg.Now().UnixNano()
	last := s.memoryWarned.Load()
	if now-last < int64(time.Minute) || !s.memoryWarned.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("a conversation was named on a path that keeps no memory: forwarded without memory",
		"tenant", tenant, "path", string(path))
}
