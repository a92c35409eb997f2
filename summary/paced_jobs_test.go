package summary

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/pace"
)

// While requests are in flight, a worker waits between jobs as its Pacer
// says: the second job starts only when the pacer's wait (for the first
// job's own time) has passed.
func TestJobsArePacedWhileBusy(t *testing.T) {
	f := newFixture(t, nil)
	for _, conv := range []string{"a", "b"} {
		f.write(conv, 0, 6, func(i int) string { return conv + " turn " + strconv.Itoa(i) })
	}
	// The pacer's clock moves only when the test fires a wait: by it.
	var clock atomic.Int64
	clock.Store(time.Unix(1_700_000_000, 0).UnixNano())
	asked := make(chan time.Duration, 4)
	fire := make(chan time.Duration)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	p := pace.New(pace.Options{Share: 0.5, Busy: func() bool { return true },
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
		After: func(d time.Duration) <-chan time.Time {
			asked <- d
			c := make(chan time.Time, 1)
			go func() {
				select {
				case d := <-fire:
					clock.Add(int64(d))
					c <- time.Unix(0, clock.Load())
				case <-stop:
				}
			}()
			return c
		}})
	done := make(chan JobDone, 4)
	m, err := New(Config{Store: f.store, Tenants: staticTenants{f.set}, Workers: 1, Pacer: p,
		OnJobDone: func(d JobDone) { done <- d }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	for _, conv := range []string{"a", "b"} {
		m.Trigger("acme", history.Key{Tenant: "acme", Conversation: conv}, "gpt-4o", "", false)
	}
	deadline := time.After(10 * time.Second)
	first := JobDone{}
	var wait time.Duration
	for first.Outcome != Landed {
		select {
		case first = <-done:
		case <-deadline:
			t.Fatal("no job landed")
		}
	}
	select {
	case wait = <-asked:
		if wait <= 0 {
			t.Fatalf("the pacer waited %v, want a positive wait", wait)
		}
	case d := <-done:
		t.Fatalf("job %+v ran with no wait after %s's", d, first.Key.Conversation)
	case <-deadline:
		t.Fatal("the worker never waited on the pacer")
	}
	select {
	case d := <-done:
		t.Fatalf("job %+v ran while the worker should wait on the pacer", d)
	default:
	}
	fire <- wait
	for {
		select {
		case d := <-done:
			if d.Outcome == Landed && d.Key != first.Key {
				return
			}
		case d := <-asked: // a wait per job after it
			go func() { fire <- d }()
		case <-deadline:
			t.Fatal("the second job never landed after the wait")
		}
	}
}
