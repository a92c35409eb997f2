package proxy

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/history/tokens"
)

// maxCachedCounts bounds the token-count cache; past it the cache starts over.
const maxCachedCounts = 1 << 14

// cachedTokens counts an instruction message (or, with tools set, a tools
// array), remembering the count by content hash: clients send the same
// system prompt and tool definitions on every call, and tokenizing them
// each time would dominate the request's cost.
func (s *Server) cachedTokens(enc tokens.Encoding, raw []byte, tools bool) int {
	if len(raw) == 0 {
		return 0
	}
	d := xxhash.New()
	d.WriteString(string(enc))
	if tools {
		d.Write([]byte{1})
	}
	d.Write(raw)
	key := d.Sum64()
	if n, ok := s.textOnce.Load(key); ok {
		return n.(int)
	}
	var n int
	if tools {
		n = s.counter.Tools(enc, raw)
	} else {
		n = s.counter.Message(enc, raw)
	}
	if s.cached.Add(1) > maxCachedCounts {
		s.textOnce.Clear()
		s.cached.Store(0)
	}
	s.textOnce.Store(key, n)
	return n
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// bodyPool recycles the buffers upstream request bodies are built in: with
// history injected they run to tens of kilobytes per request.
var bodyPool sync.Pool

// getBodyBuf returns an empty buffer with at least size capacity.
func getBodyBuf(size int) []byte {
	if b, ok := bodyPool.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// pooledBody is an upstream request body that returns its buffer to
// bodyPool when the transport closes it, which net/http guarantees once it
// is done with the body, on errors too.
type pooledBody struct {
	bytes.Reader
	buf    []byte
	closed atomic.Bool
}

func newPooledBody(b []byte) *pooledBody {
	p := &pooledBody{buf: b}
	p.Reset(b)
	return p
}

// Close gives the buffer back, once.
func (p *pooledBody) Close() error {
	if p.closed.CompareAndSwap(false, true) && cap(p.buf) <= 4<<20 {
		p.Reset(nil)
		b := p.buf[:0]
		bodyPool.Put(&b)
	}
	return nil
}

func clone(b []byte) []byte { return bytes.Clone(b) }
