package proxy

import (
	"net"
	"sync/atomic"
	"syscall"

	"github.com/recallproxy/recall/internal/sock"
)

// clientConn is a client's connection to Recall's server: coarse
// deadlines, the socket still reachable (clientGone peeks at it), and its
// state for Shutdown.
type clientConn struct {
	sock.Coarse
	sc    syscall.Conn
	state atomic.Int32 // its last fasthttp.ConnState (connTracker)
}

func (c *clientConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// coarseListener hands the server its connections with coarse deadlines.
// A connection that is not a socket (an in-memory one) is handed on as
// it is.
type coarseListener struct{ net.Listener }

func (l coarseListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, nil
	}
	return &clientConn{Coarse: sock.Coarse{Conn: c}, sc: sc}, nil
}
