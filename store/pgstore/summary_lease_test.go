package pgstore_test

import (
	"testing"

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
