package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
)

// bodyPool recycles the buffers upstream request bodies are built in: with
// history injected they run to tens of kilobytes per request. readPool
// recycles the buffers clients' bodies are read into, which the paths
// that record nothing give back once sent. holders recycles the pointers
// both hold them by, so that giving a buffer back allocates nothing.
var bodyPool, readPool, holders sync.Pool

// getBodyBuf returns an empty buffer with at least size capacity for an
// upstream body, given back (putBodyBuf) once sent.
func getBodyBuf(size int) []byte { return takeBuf(&bodyPool, size, math.MaxInt) }

// putBodyBuf gives a buffer of getBodyBuf back once it is sent.
func putBodyBuf(b []byte) { putBuf(&bodyPool, b) }

// getReadBuf returns an empty buffer with at least size capacity for a
// client's body, which a recorded exchange keeps: its messages' bytes are
// parts of it, held past the request by the window cache and the store's
// caches, which count the messages' bytes, not the buffer's. So a pooled
// buffer serves only if it is at most twice the size. Taken from the
// upstream bodies' buffers (tens of kilobytes), the buffers of bodies of
// a few hundred bytes held that much for every message in those caches:
// with the Responses API's 50-turn conversations the heap reached the
// memory limit, where the collector runs without pause.
func getReadBuf(size int) []byte { return takeBuf(&readPool, size, 2*size) }

// putReadBuf gives a buffer of getReadBuf back once the body is sent and
// nothing keeps it (a request that records nothing).
func putReadBuf(b []byte) { putBuf(&readPool, b) }

// takeBuf returns an empty buffer with at least size capacity: pool's
// next one if it holds from size to most bytes, else a new one. A pooled
// buffer larger than most goes back to the pool.
func takeBuf(pool *sync.Pool, size, most int) []byte {
	h, ok := pool.Get().(*[]byte)
	if !ok {
		return make([]byte, 0, size)
	}
	b := *h
	if cap(b) > most {
		pool.Put(h)
		return make([]byte, 0, size)
	}
	*h = nil
	holders.Put(h)
	if cap(b) < size {
		return make([]byte, 0, size)
	}
	return b[:0]
}

// putBuf gives b to pool, unless it is larger than any body should keep.
func putBuf(pool *sync.Pool, b []byte) {
	if cap(b) > 4<<20 {
		return
	}
	h, ok := holders.Get().(*[]byte)
	if !ok {
		h = new([]byte)
	}
	*h = b[:0]
	pool.Put(h)
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
		// A declared length: read into a buffer of readPool, which the
		// path without history gives back (putReadBuf) once it is sent,
		// and the recorded paths keep.
		b = getReadBuf(n)[:n]
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
