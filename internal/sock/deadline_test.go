package sock

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A coarse deadline passes a deadline on only when the one set does not
// stand for it: at or after it, within the slack it was set with (a 64th
// of the time it had left, at most a second).
func TestCoarseDeadline(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	const skip = -1 // the step passes nothing on
	steps := []struct {
		name string
		ask  time.Time
		want time.Duration // the deadline passed on, from now; skip: none
		zero bool          // the deadline passed on is zero (none)
	}{
		{name: "no deadline asked of a connection without one", ask: time.Time{}, want: skip},
		{name: "a minute away: a second's slack", ask: at(64 * time.Second), want: 65 * time.Second},
		{name: "later, within the slack", ask: at(64*time.Second + 500*time.Millisecond), want: skip},
		{name: "at the deadline set", ask: at(65 * time.Second), want: skip},
		{name: "past the deadline set", ask: at(65*time.Second + time.Millisecond), want: 66*time.Second + time.Millisecond},
		{name: "far earlier: the idle timeout after a read timeout", ask: at(2 * time.Second), want: 2*time.Second + 31250*time.Microsecond},
		{name: "ten minutes away: the slack is at most a second", ask: at(10 * time.Minute), want: 10*time.Minute + time.Second},
		{name: "none after one", ask: time.Time{}, zero: true},
		{name: "none again", ask: time.Time{}, want: skip},
		{name: "a short timeout: a short slack", ask: at(640 * time.Millisecond), want: 650 * time.Millisecond},
		{name: "within it", ask: at(645 * time.Millisecond), want: skip},
		{name: "just past it", ask: at(651 * time.Millisecond), want: 661*time.Millisecond + 171875},
		{name: "already passed: no slack", ask: at(-time.Second), want: -time.Second},
		{name: "the same again", ask: at(-time.Second), want: skip},
		{name: "a moment later than one set with no slack", ask: at(-time.Second + 1), want: -time.Second + 1},
	}
	var d coarseDeadline
	for _, s := range steps {
		var passed []time.Time
		err := d.apply(s.ask, func() time.Time { return now }, func(t time.Time) error {
			passed = append(passed, t)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		switch {
		case s.zero:
			if len(passed) != 1 || !passed[0].IsZero() {
				t.Errorf("%s: passed on %v, want the zero deadline", s.name, passed)
			}
		case s.want == skip:
			if len(passed) != 0 {
				t.Errorf("%s: passed on %v, want nothing", s.name, passed)
			}
		default:
			if len(passed) != 1 || !passed[0].Equal(at(s.want)) {
				t.Errorf("%s: passed on %v, want %v", s.name, passed, at(s.want))
			}
		}
	}
}

// A deadline that fails to reach the connection is not taken as set.
func TestCoarseDeadlineFailedIsNotKept(t *testing.T) {
	var d coarseDeadline
	now := func() time.Time { return time.Unix(0, 0) }
	closed := errors.New("closed")
	if err := d.apply(time.Unix(60, 0), now, func(time.Time) error { return closed }); err != closed {
		t.Fatalf("got %v, want the connection's error", err)
	}
	calls := 0
	if err := d.apply(time.Unix(60, 0), now, func(time.Time) error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("got %d calls (%v), want the deadline passed on again", calls, err)
	}
}

// On a socket, a coarse read deadline still ends a read: a short one
// asked after a long one is not held back by it, and the read ends at or
// after the deadline asked.
func TestCoarseDeadlineEndsARead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			peer <- c
		}
		close(peer)
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if p := <-peer; p != nil {
		defer p.Close() // open and silent: the read can only end by its deadline
	}
	c := &Coarse{Conn: raw}
	defer c.Close()
	if err := c.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	guard := time.AfterFunc(10*time.Second, func() { raw.Close() }) // the hour's deadline kept: fail, don't hang
	defer guard.Stop()
	const wait = 50 * time.Millisecond
	start := time.Now()
	for range 3 { // as fasthttp asks, request after request
		if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read ended with %v, want its deadline exceeded", err)
	}
	if took := time.Since(start); took < wait {
		t.Errorf("read ended after %v, before its deadline of %v", took, wait)
	}
}
