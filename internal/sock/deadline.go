// Package sock holds what Recall does with its sockets, on both sides of
// the proxy: coarse deadlines (Coarse) and a look at whether the peer
// left (Peek).
package sock

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// fasthttp sets a connection's deadlines on every request: the server its
// read deadline (the time to read a request, and between requests), the
// client its write and read deadlines (the tenant's timeout). Each is the
// same duration from now, a few microseconds past the last one. Every one
// the runtime's poller takes costs two clock reads and a move of its
// timer; on the plain path, where a request costs Recall about 19 µs of
// CPU, the deadlines were about 1 µs of it.
// A coarseDeadline passes a deadline on only when the one the connection
// has is not within a small slack after it.

// maxDeadlineSlack bounds how late a coarse deadline fires.
const maxDeadlineSlack = time.Second

// coarseDeadline keeps one direction's deadline of a connection. The
// deadline a connection gets is the one asked plus a slack of a 64th of
// the time left to it, at most maxDeadlineSlack; a later deadline asked
// keeps it while the one set is at or after the new one and no more than
// the slack past it. A timeout therefore fires at or after its deadline,
// and at most a 64th of its duration (and a second) later: on a connection
// busy with requests of one timeout the poller sees about a deadline a
// second instead of one a request.
type coarseDeadline struct {
	mu  sync.Mutex // held to set a deadline
	has atomic.Pointer[heldDeadline]
}

// heldDeadline is the deadline a connection has and how far it may lie
// past a deadline it stands for. A new one is made for each deadline set
// (about one a second on a busy connection); reading it takes no lock.
type heldDeadline struct {
	set   time.Time
	slack time.Duration
}

// apply gives the connection a deadline for t through setDeadline, unless
// the one it has stands for t. now is read only when a deadline is set.
func (d *coarseDeadline) apply(t time.Time, now func() time.Time, setDeadline func(time.Time) error) error {
	if d.has.Load().standsFor(t) {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.has.Load().standsFor(t) {
		return nil
	}
	if t.IsZero() {
		if err := setDeadline(t); err != nil {
			return err
		}
		d.has.Store(nil)
		return nil
	}
	slack := min(max(t.Sub(now())/64, 0), maxDeadlineSlack)
	if err := setDeadline(t.Add(slack)); err != nil {
		return err
	}
	d.has.Store(&heldDeadline{set: t.Add(slack), slack: slack})
	return nil
}

// standsFor reports whether a connection holding h (nil: no deadline)
// needs no deadline set for t (zero: none): none is asked and none held,
// or h lies at or after t and within its slack of it.
func (h *heldDeadline) standsFor(t time.Time) bool {
	if h == nil || t.IsZero() {
		return h == nil && t.IsZero()
	}
	return !t.After(h.set) && h.set.Sub(t) <= h.slack
}

// Coarse is a connection whose deadlines are coarse (coarseDeadline).
type Coarse struct {
	net.Conn
	read, write coarseDeadline
}

func (c *Coarse) SetReadDeadline(t time.Time) error {
	return c.read.apply(t, time.Now, c.Conn.SetReadDeadline)
}

func (c *Coarse) SetWriteDeadline(t time.Time) error {
	return c.write.apply(t, time.Now, c.Conn.SetWriteDeadline)
}

func (c *Coarse) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}
