package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// soleSignals opens a Store on url whose sole-writer changes arrive on the
// returned channel.
func soleSignals(t *testing.T, url string, o pgstore.Options) (*pgstore.Store, chan bool) {
	t.Helper()
	soles := make(chan bool, 16)
	o.OnSole = func(sole bool) { soles <- sole }
	return open(t, url, o), soles
}

// next waits for the next sole-writer change and checks it is want.
func next(t *testing.T, soles chan bool, want bool, what string) {
	t.Helper()
	select {
	case got := <-soles:
		if got != want {
			t.Fatalf("%s: sole writer %v, want %v", what, got, want)
		}
	case <-testCtx(t).Done():
		t.Fatalf("%s: no change of the sole writer, want %v", what, want)
	}
}

// TestSoleReplicaSeesNewcomersTurn: a replica alone on the database serves
// its window cache without reading heads. A second replica opens and
// commits a turn at once: the first replica's next load returns it (it
// stopped trusting its cache before the newcomer's Open returned).
func TestSoleReplicaSeesNewcomersTurn(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	sa, soles := soleSignals(t, url, pgstore.Options{})
	next(t, soles, true, "alone")
	a := history.NewCache(sa, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "c"}
	q := history.Query{MinMessages: 100}
	commit(t, a, k, history.Change{Append: turns(0, 1)})
	if snap, err := a.Load(ctx, k, q); err != nil || len(snap.Tail) != 2 {
		t.Fatalf("a's load: %d messages, %v; want 2", len(snap.Tail), err)
	}

	b := history.NewCache(open(t, url, pgstore.Options{}), 0, 0)
	if _, ok := sa.Sole(); ok {
		t.Fatal("b's Open returned while a still trusts its cache alone")
	}
	commit(t, b, k, history.Change{Append: turns(1, 1)})
	snap, err := a.Load(ctx, k, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tail) != 4 || snap.Meta.Version != 2 {
		t.Fatalf("a loads %d messages at version %d after b's turn, want 4 at 2", len(snap.Tail), snap.Meta.Version)
	}
	next(t, soles, false, "after b joined")
}

// TestSoleLockConnectionLoss: when the connection holding the sole-writer
// lock dies (the server released the lock: another replica may take it),
// the Store stops trusting its cache at once, then connects and takes the
// lock again; its cached windows are checked against the stored heads
// once more before they are trusted.
func TestSoleLockConnectionLoss(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	rt := &roundTrips{}
	s, soles := soleSignals(t, url, pgstore.Options{Tracer: rt})
	next(t, soles, true, "alone")
	c := history.NewCache(s, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "c"}
	commit(t, c, k, history.Change{Append: turns(0, 1)})
	load := func(what string, want int) {
		t.Helper()
		rt.take()
		if snap, err := c.Load(ctx, k, history.Query{MinMessages: 100}); err != nil || len(snap.Tail) != 2 {
			t.Fatalf("%s: load %d messages, %v; want 2", what, len(snap.Tail), err)
		}
		if got := rt.take(); got != want {
			t.Errorf("%s: load took %d round trips, want %d", what, got, want)
		}
	}
	load("sole, warm", 0)

	var killed bool
	err := s.Pool().QueryRow(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminating the lock's backend: %v, %v", killed, err)
	}
	next(t, soles, false, "lock connection killed")
	next(t, soles, true, "connected again, alone")
	load("sole again, the window not checked since", 1)
	load("sole again, checked", 0)
}

// TestWritesWaitForTheLock: a Store whose lock connection broke writes
// nothing until it holds the lock again, since another process may hold
// it alone meanwhile and trust its cache: here a plain session takes the
// lock as the Store's connection dies, and the Store's commit fails as
// unavailable, storing nothing; once the session lets go, the Store joins
// and commits.
func TestWritesWaitForTheLock(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	s, soles := soleSignals(t, url, pgstore.Options{JoinTimeout: 2 * time.Second})
	next(t, soles, true, "alone")
	other := connect(t, url)
	// In one statement: the Store's lock backend is told to exit, and this
	// session waits for the lock in its place (ahead of the Store's next
	// connection).
	if _, err := other.Exec(ctx, `SELECT pg_terminate_backend(pid), pg_advisory_lock($1) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		pgstore.SoleLockKey); err != nil {
		t.Fatal(err)
	}
	next(t, soles, false, "lock connection killed")
	k := history.Key{Tenant: "t", Conversation: "c"}
	if _, err := s.Commit(ctx, k, history.Change{Now: 1e9, Append: turns(0, 1)}); !errors.Is(err, history.ErrUnavailable) {
		t.Fatalf("commit while another session holds the lock: %v, want %v", err, history.ErrUnavailable)
	}
	var n int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM recall_messages`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("stored %d messages (%v), want none", n, err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, k, history.Change{Now: 1e9, Append: turns(0, 1)}); err != nil {
		t.Fatalf("commit once the lock is free: %v", err)
	}
}
