package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestLeaseHandOversChurnNoRows (issue 50): two replicas handing a lease
// back and forth, through TryAcquire, Acquire's queue and the exchanges'
// lease (taken with the read, freed by the commit), neither insert nor
// delete a row of recall_leases per turn: the lease's row and its
// queue's stay and are updated in place, so the table leaves no dead
// rows and dead index entries behind for vacuum. The counts are the
// server's table statistics, read once every backend of the test's
// Stores has exited (a backend writes its counts out as it exits).
func TestLeaseHandOversChurnNoRows(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	waiting := make(chan string, 64)
	a, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgstore.Open(ctx, url, pgstore.Options{OnLeaseWait: sendWaits(waiting)})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	const rounds = 40
	const name = "summary/t/c"
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range rounds {
		// a holds the lease; b waits for it, queued; a lets it go.
		release := mustTryAcquire(t, ctx, a, name, fmt.Sprintf("round %d: a", i))
		got := queueBehind(t, ctx, b, name, waiting, fmt.Sprintf("round %d: b", i))
		release()
		took(t, ctx, got, fmt.Sprintf("round %d: b", i))()
		// An exchange on each replica in turn: the read takes the
		// conversation's lease, the commit frees it.
		for _, s := range []*pgstore.Store{a, b} {
			var l history.ExchangeLease
			snap, err := s.Load(ctx, k, history.Query{Tokens: 100, Lease: &l})
			if err != nil || !l.Held() {
				t.Fatalf("round %d: exchange's read: held %v, %v", i, l.Held(), err)
			}
			v := snap.Meta.Version
			c := history.Change{Version: v, Now: int64(v+1) * 1e9, Lease: &l,
				Append: []history.Message{user(fmt.Sprintf("turn %d", i), 3)}}
			if _, err := s.Commit(ctx, k, c); err != nil {
				t.Fatalf("round %d: exchange's commit: %v", i, err)
			}
		}
	}
	a.Close()
	b.Close()

	c := connect(t, url)
	for {
		var others int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d backends of the closed Stores still there", others)
		case <-time.After(10 * time.Millisecond):
		}
	}
	var ins, del, upd, live int64
	if err := c.QueryRow(ctx, `SELECT n_tup_ins, n_tup_del, n_tup_upd, n_live_tup FROM pg_stat_user_tables
		WHERE relname = 'recall_leases'`).Scan(&ins, &del, &upd, &live); err != nil {
		t.Fatal(err)
	}
	t.Logf("recall_leases after %d rounds: %d inserted, %d deleted, %d updated, %d live", rounds, ins, del, upd, live)
	// Four rows made once: the summary's lease, its queue's place, the
	// conversation's lease and its queue's place (b queues once, for
	// the lease a kept after its first commit: keep.go).
	if ins > 4 || del != 0 {
		t.Errorf("%d rounds of hand-overs inserted %d rows and deleted %d, want at most 4 and none", rounds, ins, del)
	}
}

// TestIdleLeaseRowsAreSwept: a lease row left free (or expired) for
// longer than a minute is deleted by the Store's merger, off the request
// path, so the table does not keep a row for every name ever leased; a
// row freed just now stays, to be taken again in place.
func TestIdleLeaseRowsAreSwept(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	merged := make(chan error, 16)
	a := open(t, url, pgstore.Options{MergeEvery: 1, OnMerge: func(_ bool, err error) { merged <- err }})
	open(t, url, pgstore.Options{}) // a second Store: a's leases are rows
	for _, name := range []string{"summary/t/old", "summary/t/new"} {
		mustTryAcquire(t, ctx, a, name, name)()
	}
	if _, err := a.Pool().Exec(ctx, `UPDATE recall_leases SET expires_at = clock_timestamp() - interval '61 seconds'
		WHERE name = 'summary/t/old'`); err != nil {
		t.Fatal(err)
	}
	commit(t, a, history.Key{Tenant: "t", Conversation: "c"}, history.Change{Append: []history.Message{user("hi", 3)}})
	waitMerge(t, ctx, merged)
	rows, err := a.Pool().Query(ctx, `SELECT name FROM recall_leases ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// conv/t/c: the commit took the conversation's lease (another Store
	// may keep it: keep.go) and freed it just now.
	if fmt.Sprint(names) != "[conv/t/c summary/t/new]" {
		t.Errorf("lease rows after the sweep: %q, want conv/t/c and summary/t/new (old: free for over a minute)", names)
	}
}

// TestLeaseSweepsSpaced: the merger sweeps idle lease rows at most once
// a quarter of a minute, not on each of its wakes (every MergeEvery
// messages: a dozen a second on a busy replica, each reading the whole
// table for rows that are due a minute after they were freed). A row
// that became due since the last sweep stays until the next one is due.
func TestLeaseSweepsSpaced(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	merged := make(chan error, 16)
	a := open(t, url, pgstore.Options{MergeEvery: 1, OnMerge: func(_ bool, err error) { merged <- err }})
	var clock atomic.Int64
	clock.Store(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).UnixNano())
	pgstore.SetMergeClock(a, func() time.Time { return time.Unix(0, clock.Load()) })
	open(t, url, pgstore.Options{}) // a second Store: a's leases are rows
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := history.Meta{}
	wake := func(what string) {
		t.Helper()
		m = commit(t, a, k, history.Change{Version: m.Version, Append: []history.Message{user(what, 3)}})
		waitMerge(t, ctx, merged)
	}
	expire := func(name string) {
		t.Helper()
		mustTryAcquire(t, ctx, a, name, name)()
		if _, err := a.Pool().Exec(ctx, `UPDATE recall_leases SET expires_at = clock_timestamp() - interval '61 seconds'
			WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
	}
	has := func(name string) bool {
		t.Helper()
		var n int
		if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM recall_leases WHERE name = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	expire("summary/t/first")
	wake("the first wake sweeps")
	if has("summary/t/first") {
		t.Fatal("the first wake did not sweep a row idle for over a minute")
	}
	expire("summary/t/second")
	clock.Add(int64(14 * time.Second))
	wake("14 s later")
	if !has("summary/t/second") {
		t.Error("a wake 14 s after the last sweep swept again")
	}
	clock.Add(int64(time.Second))
	wake("15 s after the last sweep")
	if has("summary/t/second") {
		t.Error("a wake 15 s after the last sweep did not sweep")
	}
}

// waitMerge waits for the merger's next run (Options.OnMerge sends its
// error to merged) and fails the test on its error, or if it never runs.
func waitMerge(t *testing.T, ctx context.Context, merged <-chan error) {
	t.Helper()
	select {
	case err := <-merged:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the merger never ran")
	}
}
