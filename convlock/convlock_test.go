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

func TestAcquireWaitsForTheHolder(t *testing.T) {
	var tab convlock.Table
	release, err := tab.Acquire(t.Context(), one)
	if err != nil {
		t.Fatal(err)
	}
	got := acquire(&tab, one)
	waitRefs(t, &tab, one, 2)
	select {
	case <-got:
		t.Fatal("a second caller got the lock while the first held it")
	default:
	}
	release()
	select {
	case r := <-got:
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting caller did not get the lock within 5 s of its release")
	}
}

func TestConversationsDoNotWaitOnEachOther(t *testing.T) {
	var tab convlock.Table
	release, err := tab.Acquire(t.Context(), one)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	select {
	case r := <-acquire(&tab, other):
		r()
	case <-time.After(5 * time.Second):
		t.Fatal("another conversation's lock waited for this one's")
	}
}

func TestAcquireGivesUpWithItsContext(t *testing.T) {
	var tab convlock.Table
	release, err := tab.Acquire(t.Context(), one)
	if err != nil {
		t.Fatal(err)
	}
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
		r, err := tab.Acquire(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
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
