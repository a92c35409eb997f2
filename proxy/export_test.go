package proxy

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/recallproxy/recall/history"
)

// CountDeadlines wraps ln so that n counts the deadlines its connections
// are given.
func CountDeadlines(ln net.Listener, n *atomic.Int64) net.Listener { return countingListener{ln, n} }

// countingConn counts the deadlines that reach a socket.
type countingConn struct {
	*net.TCPConn
	deadlines *atomic.Int64
}

func (c countingConn) SetReadDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.TCPConn.SetReadDeadline(t)
}

func (c countingConn) SetWriteDeadline(t time.Time) error {
	c.deadlines.Add(1)
	return c.TCPConn.SetWriteDeadline(t)
}

func (c countingConn) SetDeadline(t time.Time) error {
	c.deadlines.Add(2)
	return c.TCPConn.SetDeadline(t)
}

type countingListener struct {
	net.Listener
	deadlines *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c.(*net.TCPConn), l.deadlines}, nil
}

// LockRefs returns how many requests hold or wait for k's lock.
func (s *Server) LockRefs(k history.Key) int { return s.cfg.Locks.Refs(k) }

// WaitLockRefs waits until n requests hold or wait for k's lock, or ctx
// ends.
func (s *Server) WaitLockRefs(ctx context.Context, k history.Key, n int) error {
	for s.LockRefs(k) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d on the lock of %s: %w", n, k, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}
