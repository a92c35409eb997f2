package proxy

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

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
