package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// passthrough forwards any other /v1/ call untouched, with the same
// authentication and key swap, streaming the request and response bodies.
func (s *Server) passthrough(rc *fasthttp.RequestCtx, path []byte) {
	start := s.cfg.Now()
	c, err := s.authenticate(rc)
	if err != nil {
		rc.SetConnectionClose() // the body is not read
		s.fail(rc, "passthrough", "", err, start)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
	body, size := requestBody(rc)
	var upload *handlerBody
	if body != nil {
		upload = &handlerBody{r: body, closed: make(chan struct{})}
		body = upload
	}
	req, err := newUpstreamRequest(ctx, rc, c, path, body, size)
	if err != nil {
		cancel()
		s.fail(rc, "passthrough", c.cfg.ID, err, start)
		return
	}
	resp, err := s.client.Do(req)
	err = upstreamErr(err)
	if !upload.wait(ctx) {
		// The upstream answered without taking the whole upload: end the
		// exchange rather than return while the transport still reads
		// memory that belongs to the handler.
		cancel()
		upload.wait(context.Background())
		if err == nil {
			resp.Body.Close()
			err = upstreamErr(errors.New("proxy: upstream answered before reading the request body"))
		}
	}
	if err != nil {
		cancel()
		s.fail(rc, "passthrough", c.cfg.ID, err, start)
		return
	}
	copyResponseHeader(rc, resp)
	upstreamAt := s.cfg.Now()
	s.metrics.request(c.cfg.ID, "passthrough", resp.StatusCode)
	s.inflight.Add(1)
	s.busy.Add(1)
	rc.Response.ImmediateHeaderFlush = true
	rc.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.inflight.Done()
		defer s.busy.Add(-1)
		defer cancel()
		defer resp.Body.Close()
		defer recoverStream(s.log)
		n, err := relayRaw(w, resp.Body)
		attrs := []any{"route", "passthrough", "tenant", c.cfg.ID, "status", resp.StatusCode,
			"bytes", n, "upstream_ms", ms(upstreamAt.Sub(start))}
		if err != nil {
			attrs = append(attrs, "error", err.Error())
		}
		s.log.Info("request", attrs...)
	})
	if resp.ContentLength >= 0 {
		// Keep the upstream's framing (SetBodyStreamWriter has just set
		// "chunked"): the client learns the length, the point of a HEAD,
		// and an answer cut short cannot pass for a whole one.
		rc.Response.Header.SetContentLength(int(resp.ContentLength))
	}
}

// requestBody returns the client's request body and its length, -1 when
// it is chunked. A request that declares neither a length nor chunked
// framing has no body (RFC 9112 section 6.3): like httputil, it is
// forwarded with a nil body and length 0, which net/http sends without a
// body; "unknown length" with a nil body is an error there.
func requestBody(rc *fasthttp.RequestCtx) (io.Reader, int64) {
	size := int64(rc.Request.Header.ContentLength())
	if size == 0 || size < -1 {
		return nil, 0
	}
	if st := rc.RequestBodyStream(); st != nil {
		return st, size
	}
	if b := rc.Request.Body(); len(b) > 0 {
		return bytesReader(b), int64(len(b))
	}
	return nil, 0
}

// handlerBody is a request body that lives in the RequestCtx (its buffer or
// its body stream). The transport may go on reading a body after RoundTrip
// returned, until it closes it; the handler must not return before then.
type handlerBody struct {
	r      io.Reader
	once   sync.Once
	closed chan struct{}
}

func (b *handlerBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// Close marks the body done; the transport calls it once it is.
func (b *handlerBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// wait reports whether the transport is done with the body (a nil body
// always is) before ctx ends or a short grace period passes.
func (b *handlerBody) wait(ctx context.Context) bool {
	if b == nil {
		return true
	}
	grace := time.NewTimer(5 * time.Second)
	defer grace.Stop()
	select {
	case <-b.closed:
		return true
	case <-ctx.Done():
	case <-grace.C:
	}
	return false
}

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
