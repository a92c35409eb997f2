package pgstore_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestLeaseWaiterIsNext (issue 48): a replica waiting for a lease is not
// starved by the holder's replica taking it again and again. Store b
// waits for a lease store a holds (its OnLeaseWait says it found it
// held); a then lets it go and tries again at once, five times, before b
// tries again: every one of a's tries fails, b takes the lease on its
// next try, and a takes it once b let it go. No place in the queue is
// left behind.
func TestLeaseWaiterIsNext(t *testing.T) {
	ctx := testCtx(t)
	a, b, waiting := waiterPair(t, pgtest.DB(t))
	const name = "conv:t/c"
	release := mustTryAcquire(t, ctx, a, name, "a")
	got := queueBehind(t, ctx, b, name, waiting, "b") // b found it held, and queued
	for i := range 5 {
		release()
		r, ok, err := a.TryAcquire(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			// Without the queue a takes it back every time: b would
			// wait for as long as a keeps taking it.
			r()
			t.Fatalf("a's try %d after letting the lease go took it again while b waited for it", i+1)
		}
		release = func() {}
	}
	releaseB := took(t, ctx, got, "b, once a let it go,")
	cannotTake(t, ctx, a, name, "a, while b holds the lease,")
	releaseB()
	mustTryAcquire(t, ctx, a, name, "a, once b let the lease go,")()
	var rows int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM recall_leases WHERE holder <> ''`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("got %d held rows (leases or places in a queue) in recall_leases once every lease was let go, want 0", rows)
	}
}

// TestExchangeLeaseWaiterIsNext: the same through the exchanges' lease,
// taken with the plan's read (Query.Lease): while b's read waits for the
// conversation's lease a holds, a's next exchange, started after a let
// it go, waits behind b's, and goes once b's exchange let it go.
func TestExchangeLeaseWaiterIsNext(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	waitsA := make(chan string, 64)
	waitsB := make(chan string, 64)
	a := open(t, url, pgstore.Options{OnLeaseWait: func(name string) { waitsA <- name }})
	b := open(t, url, pgstore.Options{OnLeaseWait: func(name string) { waitsB <- name }})
	k := history.Key{Tenant: "t", Conversation: "c"}
	if _, err := a.Commit(ctx, k, history.Change{Append: []history.Message{msg("user", `{"role":"user","content":"hi"}`, 3)}}); err != nil {
		t.Fatal(err)
	}
	var first history.ExchangeLease
	if _, err := a.Load(ctx, k, history.Query{Tokens: 100, Lease: &first}); err != nil || !first.Held() {
		t.Fatalf("a's first exchange: held %v, %v", first.Held(), err)
	}
	type loaded struct {
		who string
		err error
	}
	done := make(chan loaded, 2)
	var leaseB, leaseA history.ExchangeLease
	go func() {
		_, err := b.Load(ctx, k, history.Query{Tokens: 100, Lease: &leaseB})
		done <- loaded{"b", err}
	}()
	waited(t, ctx, waitsB, "b's exchange")
	first.Release()
	go func() {
		_, err := a.Load(ctx, k, history.Query{Tokens: 100, Lease: &leaseA})
		done <- loaded{"a", err}
	}()
	d := recv(t, ctx, done, "neither exchange took the lease")
	if d.err != nil || d.who != "b" {
		t.Fatalf("first to take the lease a let go: %s (%v), want b, which was waiting for it", d.who, d.err)
	}
	waited(t, ctx, waitsA, "a's exchange") // a's exchange waits behind b's
	leaseB.Release()
	d = recv(t, ctx, done, "a's exchange never took the lease b let go")
	if d.err != nil || !leaseA.Held() {
		t.Fatalf("a's exchange: held %v, %v", leaseA.Held(), d.err)
	}
	leaseA.Release()
}

// A place in a lease's queue that its Store let expire (the Store died
// while it waited) is taken by the next Store that waits, not renewed
// for the dead one: otherwise the dead Store's place would hold the
// lease from every replica once its holder let it go.
func TestLeaseQueueTakesAnExpiredPlace(t *testing.T) {
	ctx := testCtx(t)
	a, b, waiting := waiterPair(t, pgtest.DB(t))
	const name = "conv:t/dead"
	release := mustTryAcquire(t, ctx, a, name, "a")
	if _, err := a.Pool().Exec(ctx, `INSERT INTO recall_leases (name, holder, expires_at)
		VALUES ('next ' || $1, 'a store that died', clock_timestamp() - interval '1 second')`, name); err != nil {
		t.Fatal(err)
	}
	got := queueBehind(t, ctx, b, name, waiting, "b") // b found the lease held, and queued
	var holder string
	if err := a.Pool().QueryRow(ctx, `SELECT holder FROM recall_leases WHERE name = 'next ' || $1`, name).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder == "a store that died" {
		t.Errorf("the queue's place is still the dead store's, renewed: b, which waits, should hold it")
	}
	release()
	took(t, ctx, got, "b, once a let it go,")()
}
