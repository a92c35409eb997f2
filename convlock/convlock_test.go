package convlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recallproxy/recall/convlock"
	"github.com/recallproxy/recall/history"
)

var (
	one   = history.Key{Tenant: "t", Conversation: "one"}
	other = history.Key{Tenant: "t", Conversation: "other"}
)

// waitRefs waits until n callers hold or wait for k's lock, or fails the
// test after 5 s.
func waitRefs(t *testing.T, tab *convlock.Table, k history.Key, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for tab.Refs(k) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers on %v's lock after 5 s, want %d", tab.Refs(k), k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustAcquire takes k's lock, or fails the test.
func mustAcquire(t *testing.T, tab *convlock.Table, k history.Key) (release func()) {
	t.Helper()
	release, err := tab.Acquire(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// acquire takes k's lock in a goroutine of its own and sends its release
// once it has it.
func acquire(tab *convlock.Table, k history.Key) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		release, err := tab.Acquire(context.Background(), k)
		if err == nil {
			got <- release
		}
	}()
	return got
}

// releaseWithin waits up to 5 s for the lock acquire sends, and releases
// it; else it fails the test with fail.
func releaseWithin(t *testing.T, got <-chan func(), fail string) {
	t.Helper()
	select {
	case release := <-got:
		release()
	case <-time.After(5 * time.Second):
		t.Fatal(fail)
	}
}

func TestAcquireWaitsForTheHolder(t *testing.T) {
	var tab convlock.Table
	release := mustAcquire(t, &tab, one)
	got := acquire(&tab, one)
	waitRefs(t, &tab, one, 2)
	select {
	case <-got:
		t.Fatal("a second caller got the lock while the first held it")
	default:
	}
	release()
	releaseWithin(t, got, "the waiting caller did not get the lock within 5 s of its release")
}

func TestConversationsDoNotWaitOnEachOther(t *testing.T) {
	var tab convlock.Table
	release := mustAcquire(t, &tab, one)
	defer release()
	releaseWithin(t, acquire(&tab, other), "another conversation's lock waited for this one's")
}

func TestAcquireGivesUpWithItsContext(t *testing.T) {
	var tab convlock.Table
	release := mustAcquire(t, &tab, one)
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if r, err := tab.Acquire(ctx, one); !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("Acquire with its context ended: got %v, release %v; want context.Canceled and none", err, r != nil)
	}
	if n := tab.Refs(one); n != 1 {
		t.Errorf("got %d callers on the lock after one gave up, want 1 (the holder)", n)
	}
}

// Entries are counted: the table holds only conversations in flight.
func TestEntriesGoWhenNobodyHoldsOrWaits(t *testing.T) {
	var tab convlock.Table
	var releases []func()
	for _, k := range []history.Key{one, other} {
		releases = append(releases, mustAcquire(t, &tab, k))
	}
	if n := tab.Active(); n != 2 {
		t.Fatalf("got %d conversations active, want 2", n)
	}
	for _, r := range releases {
		r()
	}
	if n, refs := tab.Active(), tab.Refs(one); n != 0 || refs != 0 {
		t.Fatalf("got %d conversations active and %d callers on one's lock after every release, want 0 and 0", n, refs)
	}
}
