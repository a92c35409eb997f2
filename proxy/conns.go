package proxy

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// connTracker knows every open connection and whether it is between
// requests, so Shutdown can close idle keep-alive connections at once
// (fasthttp's own shutdown gives a fresh connection five seconds) and, when
// the drain deadline passes, every connection left.
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]*atomic.Int32 // each one's last fasthttp.ConnState
}

// track is the fasthttp.Server ConnState hook. A client's socket keeps
// its own state, so that its turns between requests and back, twice a
// request, take no lock.
func (t *connTracker) track(c net.Conn, state fasthttp.ConnState) {
	cc, own := c.(*clientConn)
	if own && (state == fasthttp.StateActive || state == fasthttp.StateIdle) {
		cc.state.Store(int32(state))
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch state {
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(t.conns, c)
	default:
		if t.conns == nil {
			t.conns = make(map[net.Conn]*atomic.Int32)
		}
		s := t.conns[c]
		if s == nil {
			s = new(atomic.Int32)
			if own {
				s = &cc.state
			}
			t.conns[c] = s
		}
		s.Store(int32(state))
	}
}

// closeIdle closes the connections that are not in a request.
func (t *connTracker) closeIdle() { t.close(false) }

// closeAll closes every connection.
func (t *connTracker) closeAll() { t.close(true) }

func (t *connTracker) close(all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, s := range t.conns {
		if state := fasthttp.ConnState(s.Load()); all || state == fasthttp.StateIdle || state == fasthttp.StateNew {
			if cc, ok := c.(*clientConn); ok {
				cc.shut() // not Close: fasthttp's goroutine may be writing
			} else {
				c.Close()
			}
			delete(t.conns, c)
		}
	}
}
