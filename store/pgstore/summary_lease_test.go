package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestSummaryLandingFreesItsLease: while Stores share the database, a
// summary that lands on its base frees the summary lease its Store holds
// on the conversation in the landing's own statement: another Store
// takes the lease at once, and the holder's release then costs no round
// trip and leaves the other's lease alone. A summary that does not land
// (its base moved on) frees nothing.
func TestSummaryLandingFreesItsLease(t *testing.T) {
	rt := &roundTrips{}
	url := pgtest.DB(t)
	a := open(t, url, pgstore.Options{Tracer: rt})
	b := open(t, url, pgstore.Options{})
	ctx := testCtx(t)
	k := history.Key{Tenant: "acme", Conversation: "sum-lease"}
	name := history.LeaseName(history.LeaseSummary, k)
	m := commit(t, a, k, history.Change{Append: turns(0, 4), Now: 1e9})
	summary := func(base history.Meta, text string) history.Change {
		return history.Change{Version: base.Version, Base: &base, Now: 9e9, Summary: &history.SummaryChange{
			Incarnation: base.Incarnation, Epoch: base.Epoch, Base: summaryBase(base),
			Summary: history.Summary{Text: text, Through: 4, Turns: 2, Tokens: 4, At: 3e9}}}
	}

	// Stale: b committed a turn since the job read m, and summarised it.
	release := mustTryAcquire(t, ctx, a, name, "a")
	moved := commit(t, b, k, history.Change{Version: m.Version, Append: turns(4, 1), Now: 2e9})
	if _, err := b.Commit(ctx, k, summary(moved, "b's")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Commit(ctx, k, summary(m, "stale")); err == nil {
		t.Fatal("a summary on a base moved on landed")
	}
	cannotTake(t, ctx, b, name, "b, after a's summary did not land")
	release()

	// Landed: the lease is free before its holder lets it go.
	snap, err := a.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	release = mustTryAcquire(t, ctx, a, name, "a")
	landed := summary(snap.Meta, "a's")
	landed.Summary.Base = summaryBase(snap.Meta)
	landed.Summary.Summary.Through = 10
	if _, err := a.Commit(ctx, k, landed); err != nil {
		t.Fatal(err)
	}
	releaseB := mustTryAcquire(t, ctx, b, name, "b, after a's summary landed")
	rt.take()
	release()
	if n := rt.take(); n != 0 {
		t.Errorf("the release after the landing took %d round trips, want 0", n)
	}
	cannotTake(t, ctx, a, name, "a, while b holds the lease")
	releaseB()
	mustTryAcquire(t, ctx, a, name, "a, after b let it go")()
}

// summaryBase is the covered-through of m's stored summary (0: none).
func summaryBase(m history.Meta) uint64 {
	if m.Summary == nil {
		return 0
	}
	return m.Summary.Through
}

// TestSummaryLeaseCoveredByTheKeptConversation: a Store that keeps a
// conversation's lease (its exchanges' writer) holds a summary job's
// lease on the conversation in memory, with no round trip: no take
// before the job, no free after it. When another Store asks for the
// conversation's lease while such a job runs, the keeper takes the
// summary lease's row before it lets the conversation go, so the other
// Store, now the conversation's writer, cannot start a summary job of
// its own until the keeper's job ends.
func TestSummaryLeaseCoveredByTheKeptConversation(t *testing.T) {
	rt := &roundTrips{}
	a, b, _, k := keptPair(t, pgstore.Options{Tracer: rt})
	ctx := testCtx(t)
	name := history.LeaseName(history.LeaseSummary, k)

	rt.take()
	mustTryAcquire(t, ctx, a, name, "a, keeping the conversation")()
	if n := rt.take(); n != 0 {
		t.Errorf("a summary lease covered by the kept conversation took %d round trips to take and release, want 0", n)
	}

	job := mustTryAcquire(t, ctx, a, name, "a's job")
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conv, err := b.Acquire(wait, history.LeaseName(history.LeaseConversation, k))
	if err != nil {
		t.Fatalf("b's Acquire of the conversation's kept lease: %v", err)
	}
	defer conv()
	cannotTake(t, ctx, b, name, "b, while a's covered job runs")
	job()
	mustTryAcquire(t, ctx, b, name, "b, once a's job ended")()
}

// TestSummaryLeaseUncoveredByTheCommitThatFreesTheConversation: the
// same when the conversation's kept lease is wanted while an exchange of
// the keeper holds it, so that the exchange's commit frees it: the
// commit takes the covered summary lease's row first.
func TestSummaryLeaseUncoveredByTheCommitThatFreesTheConversation(t *testing.T) {
	a, b, ca, k := keptPair(t, pgstore.Options{})
	ctx := testCtx(t)
	name := history.LeaseName(history.LeaseSummary, k)
	convName := history.LeaseName(history.LeaseConversation, k)
	wanted := make(chan string, 8)
	pgstore.OnWanted(a, func(n string) { wanted <- n })

	var l history.ExchangeLease
	snap, err := ca.Load(ctx, k, history.Query{Tokens: 1 << 20, Lease: &l})
	if err != nil || !l.Held() {
		t.Fatalf("a's exchange's read: lease held %v, %v", l.Held(), err)
	}
	job := mustTryAcquire(t, ctx, a, name, "a's job")
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	got := make(chan func(), 1)
	go func() {
		release, err := b.Acquire(wait, convName)
		if err != nil {
			t.Errorf("b's Acquire of the conversation's kept lease: %v", err)
			release = func() {}
		}
		got <- release
	}()
	for n := ""; n != convName; {
		select {
		case n = <-wanted:
		case <-wait.Done():
			t.Fatal("a never heard that b wants the conversation")
		}
	}
	v := snap.Meta.Version
	if _, err := ca.Commit(ctx, k, history.Change{Version: v, Now: int64(v+1) * 1e9, Lease: &l,
		Append: []history.Message{user("a's turn", 3), asst("ok", 1)}}); err != nil {
		t.Fatal(err)
	}
	conv := <-got
	defer conv()
	cannotTake(t, ctx, b, name, "b, while a's covered job runs")
	job()
	mustTryAcquire(t, ctx, b, name, "b, once a's job ended")()
}
