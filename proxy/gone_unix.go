//go:build unix

package proxy

import (
	"net"
	"syscall"
)

// clientGone reports whether the client closed (or reset) its connection:
// a peek that neither waits nor consumes what the client may have sent,
// or a connection already closed on this side. A client still connected,
// or a connection this cannot look into (not a socket), is not gone.
func clientGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			gone = n == 0 // an orderly close; n > 0 is a pipelined request
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default:
			gone = true // reset
		}
		return true // done: never wait for readability
	})
	// A connection closed on this side is gone too: fasthttp closes it
	// once a write of the streamed body to it failed, which can be before
	// the relay looks (seen as a Responses stream committed for a client
	// that had left, in CI).
	return gone || err != nil
}
