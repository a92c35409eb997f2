package proxy

import (
	"net"
	"sync"

	"github.com/valyala/fasthttp"
)

// connTracker knows every open connection and whether it is between
// requests, so Shutdown can close idle keep-alive connections at once
// (fasthttp's own shutdown gives a fresh connection five seconds) and, when
// the drain deadline passes, every connection left.
type connTracker struct {
	mu    sync.Mutex
	conns map[net.Conn]fasthttp.ConnState
}

// track is the fasthttp.Server ConnState hook.
func (t *connTracker) track(c net.Conn, state fasthttp.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch state {
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		delete(t.conns, c)
	default:
		if t.conns == nil {
			t.conns = make(map[net.Conn]fasthttp.ConnState)
		}
		t.conns[c] = state
	}
}

// closeIdle closes the connections that are not in a request.
func (t *connTracker) closeIdle() { t.close(false) }

// closeAll closes every connection.
func (t *connTracker) closeAll() { t.close(true) }

func (t *connTracker) close(all bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, state := range t.conns {
		if all || state == fasthttp.StateIdle || state == fasthttp.StateNew {
			c.Close()
			delete(t.conns, c)
		}
	}
}
