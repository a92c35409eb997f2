// Package pace bounds the share of the proxy's core that background work
// takes while requests are being served.
//
// Background work that follows requests comes in bursts: when the load
// script's conversations, served round-robin, cross summary.trigger_turns
// together, a thousand summary jobs are queued within a second, and the
// workers running them back to back left every request queued behind
// them for seconds on a one-core proxy. A Pacer lets each piece of work
// start at once while no request is in flight (idle time is free), and
// while requests are in flight spaces the pieces so that their own time
// (what they spent on the core, not waiting on an upstream or a disk) is
// at most Share of the wall clock. Work is delayed, never dropped: a
// backlog drains at Share of the core under load and at full speed when
// the load stops.
package pace

import (
	"context"
	"sync"
	"time"
)

// Options configure a Pacer. Zero fields take the documented defaults.
type Options struct {
	// Share is the most of the wall clock the paced work may take while
	// Busy reports requests in flight, in (0, 1]. Default 0.2.
	Share float64
	// Busy reports whether requests are in flight (required: without it
	// nothing is paced).
	Busy func() bool
	// MaxDelay bounds how long one piece of work may be held back. Default
	// one second.
	MaxDelay time.Duration
	// Now is the clock and After waits on it. Default time.Now and
	// time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// A Pacer spaces pieces of background work; its methods are safe for
// concurrent use, and a nil Pacer paces nothing.
type Pacer struct {
	o    Options
	mu   sync.Mutex
	next time.Time // while busy, no piece starts before this
}

// New returns a Pacer for o.
func New(o Options) *Pacer {
	if o.Share <= 0 || o.Share > 1 {
		o.Share = 0.2
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.After == nil {
		o.After = time.After
	}
	return &Pacer{o: o}
}

// Wait returns when the next piece of work may start: at once while no
// request is in flight or the work done so far is within its share,
// otherwise when it is (re-checked, so that requests ending cut the wait
// short only at the next check), or when ctx ends, with ctx's error.
func (p *Pacer) Wait(ctx context.Context) error {
	if p == nil || p.o.Busy == nil {
		return ctx.Err()
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !p.o.Busy() {
			return nil
		}
		p.mu.Lock()
		d := p.next.Sub(p.o.Now())
		p.mu.Unlock()
		if d <= 0 {
			return nil
		}
		select {
		case <-p.o.After(min(d, p.o.MaxDelay)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Done charges a piece of work that just ended with own, the time it
// spent on the core: while requests are in flight, the next piece starts
// no sooner than own × (1 − Share) / Share after this one ended (after the
// pieces already charged, when several run at once), and never more than
// MaxDelay from now. Work done while nothing was in flight is free.
func (p *Pacer) Done(own time.Duration) {
	if p == nil || p.o.Busy == nil || own <= 0 || !p.o.Busy() {
		return
	}
	rest := time.Duration(float64(own) * (1 - p.o.Share) / p.o.Share)
	now := p.o.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	next := now
	if p.next.After(now) {
		next = p.next
	}
	next = next.Add(rest)
	if limit := now.Add(p.o.MaxDelay); next.After(limit) {
		next = limit
	}
	p.next = next
}
