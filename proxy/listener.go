package proxy

import (
	"net"
	"sync"
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
	// holding and held are a held write (HoldNext): fasthttp's goroutine
	// alone reads and writes them.
	holding bool
	held    *[]byte
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

// HoldNext holds the connection's writes from the next one on
// (streambody.Coalescer): a stream's last chunk, the last chunk that
// ends its body and the empty trailer after it go in one write. Only
// fasthttp's goroutine for the connection writes to it and calls this,
// ReleaseWithNext and Release.
func (c *clientConn) HoldNext() { c.holding = true }

// ReleaseWithNext ends the hold: what is held goes with the next write.
func (c *clientConn) ReleaseWithNext() { c.holding = false }

// Release ends the hold and writes what is held, if anything.
func (c *clientConn) Release() error {
	c.holding = false
	if c.held == nil {
		return nil
	}
	_, err := c.Write(nil)
	return err
}

func (c *clientConn) Write(p []byte) (int, error) {
	switch {
	case c.holding:
		if c.held == nil {
			c.held = heldWrites.Get().(*[]byte)
		}
		*c.held = append(*c.held, p...)
		return len(p), nil
	case c.held == nil:
		return c.Coarse.Write(p)
	}
	held := c.held
	c.held = nil
	defer heldWrites.Put(held)
	b := append(*held, p...)
	*held = b[:0]
	n, err := c.Coarse.Write(b)
	if n -= len(b) - len(p); n < 0 {
		n = 0
	}
	return n, err
}

// Close writes what the connection still holds (fasthttp closed it
// without the write a release waited for), then closes it.
func (c *clientConn) Close() error {
	if c.held != nil {
		c.holding = false
		_, _ = c.Write(nil)
	}
	return c.Coarse.Close()
}

// shut closes the socket from another goroutine than the connection's
// (Shutdown's): it leaves what the connection holds, which only
// fasthttp's goroutine touches; that goroutine sees the close as a
// write or read error and closes the connection itself.
func (c *clientConn) shut() error { return c.Coarse.Close() }

// heldWrites recycles the buffers of held writes (a stream's last chunk,
// the last chunk and the trailer after it).
var heldWrites = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}
