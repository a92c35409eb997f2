// Package socktest counts what reaches the sockets of tests: the
// deadlines a client or a server gives its connections.
package socktest

import (
	"net"
	"sync/atomic"
	"time"
)

// Conn is a TCP connection that counts in Deadlines the deadlines that
// reach it: one for a read or a write deadline, two for SetDeadline.
type Conn struct {
	*net.TCPConn
	Deadlines *atomic.Int64
}

// SetReadDeadline counts one deadline and sets it on the connection.
func (c Conn) SetReadDeadline(t time.Time) error {
	c.Deadlines.Add(1)
	return c.TCPConn.SetReadDeadline(t)
}

// SetWriteDeadline counts one deadline and sets it on the connection.
func (c Conn) SetWriteDeadline(t time.Time) error {
	c.Deadlines.Add(1)
	return c.TCPConn.SetWriteDeadline(t)
}

// SetDeadline counts two deadlines, a read and a write one, and sets them
// on the connection.
func (c Conn) SetDeadline(t time.Time) error {
	c.Deadlines.Add(2)
	return c.TCPConn.SetDeadline(t)
}

// CountDeadlines wraps ln, a TCP listener, so that n counts the deadlines
// its connections are given (see Conn).
func CountDeadlines(ln net.Listener, n *atomic.Int64) net.Listener {
	return listener{ln, n}
}

type listener struct {
	net.Listener
	deadlines *atomic.Int64
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Conn{c.(*net.TCPConn), l.deadlines}, nil
}
