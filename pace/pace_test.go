package pace

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a fake clock: After records what was asked and fires when the
// test advances past it.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	asked  chan time.Duration
	timers []timer
}

type timer struct {
	at time.Time
	c  chan time.Time
}

func newClock() *clock {
	return &clock{now: time.Unix(1_700_000_000, 0), asked: make(chan time.Duration, 16)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, timer{c.now.Add(d), ch})
	c.mu.Unlock()
	c.asked <- d
	return ch
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

func waitAsync(p *Pacer, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- p.Wait(ctx) }()
	return done
}

func asked(t *testing.T, c *clock) time.Duration {
	t.Helper()
	select {
	case d := <-c.asked:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("Wait never waited on the clock")
		return 0
	}
}

func returned(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return")
		return nil
	}
}

// While requests are in flight, the piece after one that took 10 ms of
// the core waits 40 ms at a share of 0.2: the work takes a fifth of the
// wall clock.
func TestBusyWorkIsSpacedToItsShare(t *testing.T) {
	c := newClock()
	var busy atomic.Bool
	busy.Store(true)
	p := New(Options{Share: 0.2, Busy: busy.Load, Now: c.Now, After: c.After})
	if err := p.Wait(context.Background()); err != nil {
		t.Fatalf("first Wait: %v", err)
	}
	p.Done(10 * time.Millisecond)
	done := waitAsync(p, context.Background())
	if d := asked(t, c); d != 40*time.Millisecond {
		t.Fatalf("waited %v, want 40ms", d)
	}
	c.advance(40 * time.Millisecond)
	if err := returned(t, done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	// Two pieces charged back to back (two workers) add up.
	p.Done(10 * time.Millisecond)
	p.Done(10 * time.Millisecond)
	done = waitAsync(p, context.Background())
	if d := asked(t, c); d != 80*time.Millisecond {
		t.Fatalf("after two pieces waited %v, want 80ms", d)
	}
	c.advance(80 * time.Millisecond)
	returned(t, done)
}

// Work done while nothing is in flight is free, and a wait ends at the
// next check once the requests are gone.
func TestIdleWorkIsFree(t *testing.T) {
	c := newClock()
	var busy atomic.Bool
	p := New(Options{Share: 0.1, Busy: busy.Load, Now: c.Now, After: c.After, MaxDelay: 50 * time.Millisecond})
	p.Done(time.Second) // idle: not charged
	busy.Store(true)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after idle work: %v", err)
	}
	select {
	case d := <-c.asked:
		t.Fatalf("Wait after idle work waited %v, want no wait", d)
	default:
	}
	p.Done(time.Second) // busy: charged, bounded by MaxDelay
	done := waitAsync(p, context.Background())
	if d := asked(t, c); d != 50*time.Millisecond {
		t.Fatalf("waited %v, want MaxDelay 50ms", d)
	}
	busy.Store(false)
	c.advance(50 * time.Millisecond)
	if err := returned(t, done); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// A piece far over its share is held back at most MaxDelay from when it
// was charged, and a Wait ends with its context.
func TestMaxDelayAndCancel(t *testing.T) {
	c := newClock()
	p := New(Options{Share: 0.5, Busy: func() bool { return true }, Now: c.Now, After: c.After, MaxDelay: time.Second})
	p.Done(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(p, ctx)
	if d := asked(t, c); d != time.Second {
		t.Fatalf("waited %v, want 1s", d)
	}
	cancel()
	if err := returned(t, done); err != context.Canceled {
		t.Fatalf("Wait: %v, want context.Canceled", err)
	}
	var nilPacer *Pacer
	nilPacer.Done(time.Second)
	if err := nilPacer.Wait(context.Background()); err != nil {
		t.Fatalf("nil Pacer Wait: %v", err)
	}
}
