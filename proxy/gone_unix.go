//go:build unix

package proxy

import (
	"errors"
	"net"
	"syscall"
)

var errNotSocket = errors.New("proxy: not a socket")

// clientGone reports whether the client closed (or reset) its connection
// (a connection that knows, a WebSocket turn's (package wsmode), is
// asked):
// a peek that neither waits nor consumes what the client may have sent,
// or a connection already closed on this side. A client still connected,
// or a connection this cannot look into (not a socket), is not gone.
func clientGone(c net.Conn) bool {
	if g, ok := c.(goner); ok {
		return g.Gone()
	}
	_, closed, err := peek(c) // bytes pending are a pipelined request
	if err == errNotSocket {
		return false
	}
	// A connection closed on this side is gone too: fasthttp closes it
	// once a write of the streamed body to it failed, which can be before
	// the relay looks (seen as a Responses stream committed for a client
	// that had left, in CI).
	return closed || err != nil
}

// idleConnDead reports whether an idle upstream connection can no longer
// carry a request: the upstream closed or reset it, or sent bytes nobody
// asked for (a late error page, a TLS alert before its close), which the
// next request would read as its answer. A connection this cannot look
// into is taken as alive.
func idleConnDead(c net.Conn) bool {
	pending, closed, err := peek(c)
	return err == nil && (pending || closed)
}

// peek looks at c's socket without waiting and without consuming: bytes
// are pending, or the peer closed (an orderly close or a reset). err is
// set when c is not a socket or is closed on this side.
func peek(c net.Conn) (pending, closed bool, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false, false, errNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, false, err
	}
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			pending, closed = n > 0, n == 0
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default:
			closed = true // reset
		}
		return true // done: never wait for readability
	})
	return pending, closed, err
}
