package proxy

import (
	"net"

	"github.com/recallproxy/recall/internal/sock"
)

// clientGone reports whether the client closed (or reset) its connection
// (a connection that knows, a WebSocket turn's (package wsmode), is
// asked): a peek that neither waits nor consumes what the client may have
// sent, or a connection already closed on this side. A client still
// connected, or a connection this cannot look into (not a socket, or any
// on a platform where sock.Peek cannot look), is not gone.
func clientGone(c net.Conn) bool {
	if g, ok := c.(goner); ok {
		return g.Gone()
	}
	_, closed, err := sock.Peek(c) // bytes pending are a pipelined request
	if err == sock.ErrNotSocket {
		return false
	}
	// A connection closed on this side is gone too: fasthttp closes it
	// once a write of the streamed body to it failed, which can be before
	// the relay looks (seen as a Responses stream committed for a client
	// that had left, in CI).
	return closed || err != nil
}
