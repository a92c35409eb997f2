package pgstore_test

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/pgstore"
)

// waiterPair opens two Stores on url: a, and b, whose OnLeaseWait sends
// each name it finds held, and queues for, to waiting.
func waiterPair(t *testing.T, url string) (a, b *pgstore.Store, waiting chan string) {
	t.Helper()
	waiting = make(chan string, 64)
	a = open(t, url, pgstore.Options{})
	b = open(t, url, pgstore.Options{OnLeaseWait: func(name string) { waiting <- name }})
	return a, b, waiting
}

// mustTryAcquire takes name with l.TryAcquire and returns its release;
// it fails the test, naming who, if the lease was not taken.
func mustTryAcquire(t *testing.T, ctx context.Context, l history.Leaser, name, who string) func() {
	t.Helper()
	release, ok, err := l.TryAcquire(ctx, name)
	if err != nil || !ok {
		t.Fatalf("%s's TryAcquire: ok %v, %v; want the lease", who, ok, err)
	}
	return release
}

// cannotTake fails the test, naming who, if l.TryAcquire takes name (or
// fails): someone holds it.
func cannotTake(t *testing.T, ctx context.Context, l history.Leaser, name, who string) {
	t.Helper()
	if release, ok, err := l.TryAcquire(ctx, name); err != nil || ok {
		if ok {
			release()
		}
		t.Fatalf("%s's TryAcquire of a held lease: ok %v, %v; want not ok", who, ok, err)
	}
}

// queueBehind starts s.Acquire(name) and returns once waiting says s
// found the lease held and queued for it (the channel s's OnLeaseWait
// sends to). The returned channel yields s's release once it takes the
// lease.
func queueBehind(t *testing.T, ctx context.Context, s *pgstore.Store, name string, waiting <-chan string, who string) <-chan func() {
	t.Helper()
	got := make(chan func(), 1)
	go func() {
		r, err := s.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	waited(t, ctx, waiting, who)
	return got
}

// waited returns the name of the lease a Store found held, once its
// OnLeaseWait sends it to waits; it fails the test, saying who never
// waited, if ctx ends first.
func waited(t *testing.T, ctx context.Context, waits <-chan string, who string) string {
	t.Helper()
	return recv(t, ctx, waits, who+" never waited")
}

// sendWaits is an OnLeaseWait that sends each name to waits, or drops it
// when waits is full.
func sendWaits(waits chan<- string) func(name string) {
	return func(name string) {
		select {
		case waits <- name:
		default:
		}
	}
}

// took returns the release queueBehind's channel yields, failing the
// test, naming who, if the context ends first.
func took(t *testing.T, ctx context.Context, got <-chan func(), who string) func() {
	t.Helper()
	return recv(t, ctx, got, who+" never took the lease")
}

// recv returns the next value ch carries; if ctx ends first, it fails
// the test, saying failure.
func recv[T any](t *testing.T, ctx context.Context, ch <-chan T, failure string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatal(failure)
		var zero T
		return zero
	}
}
