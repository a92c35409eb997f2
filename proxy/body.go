package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
)

// bodyPool recycles the buffers upstream request bodies are built in: with
// history injected they run to tens of kilobytes per request. holders
// recycles the pointers bodyPool holds them by, so that giving a buffer
// back allocates nothing.
var bodyPool, holders sync.Pool

// getBodyBuf returns an empty buffer with at least size capacity.
func getBodyBuf(size int) []byte {
	h, ok := bodyPool.Get().(*[]byte)
	if !ok {
		return make([]byte, 0, size)
	}
	b := *h
	*h = nil
	holders.Put(h)
	if cap(b) < size {
		return make([]byte, 0, size)
	}
	return b[:0]
}

// putBodyBuf gives a buffer of getBodyBuf back once it is sent.
func putBodyBuf(b []byte) {
	if cap(b) > 4<<20 {
		return
	}
	h, ok := holders.Get().(*[]byte)
	if !ok {
		h = new([]byte)
	}
	*h = b[:0]
	bodyPool.Put(h)
}

// readBody reads a chat-completions body, bounded by MaxBodyBytes.
func (s *Server) readBody(rc *fasthttp.RequestCtx) ([]byte, error) {
	st := rc.RequestBodyStream()
	if st == nil {
		return rc.Request.Body(), nil
	}
	var b []byte
	var err error
	if n := rc.Request.Header.ContentLength(); n >= 0 && n <= s.cfg.MaxBodyBytes {
		// A declared length: read into a buffer of bodyPool, which the
		// path without history gives back (putBodyBuf) once it is sent.
		b = getBodyBuf(n)[:n]
		_, err = io.ReadFull(st, b)
	} else {
		b, err = pipeline.ReadLimited(st, s.cfg.MaxBodyBytes)
	}
	if errors.Is(err, pipeline.ErrTooLarge) {
		return nil, apierr.TooLarge
	}
	if err != nil {
		return nil, apierr.BadBody
	}
	return b, nil
}

// fail answers err in OpenAI's shape, logs and counts it.
func (s *Server) fail(rc *fasthttp.RequestCtx, route, tenant string, err error, start time.Time) {
	e := classify(err)
	writeError(rc, e)
	s.metrics.CountRequest(tenant, route, e.Status)
	level := slog.LevelInfo
	if e.Status >= 500 {
		level = slog.LevelError
	}
	attrs := []any{"route", route, "tenant", tenant, "status", e.Status}
	if e.Code != "" {
		attrs = append(attrs, "code", e.Code)
	}
	attrs = append(attrs, "overhead_ms", ms(s.cfg.Now().Sub(start)), "error", err.Error())
	s.log.Log(context.Background(), level, "request", attrs...)
}
