package pgstore_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestCommitOnEndedSessions: the server ends the sessions of the store's
// idle connections (as a restart does, or pg_terminate_backend), each
// leaving its FATAL message on the socket, read only once the next
// statement was written. The next commit on its base, sent within the
// second in which the pool does not ping, still lands: it writes only on
// its base, so it is sent again on a fresh connection.
func TestCommitOnEndedSessions(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{MaxConns: 4})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commit(t, s, k, history.Change{Append: turns(0, 1)})
	// The proxy's commits: one statement on the base it loaded, sent by
	// the committers on their own pool.
	onBase := func(snap history.Snapshot, turn int) error {
		_, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Base: &snap.Meta, Now: 9e9, Append: turns(turn, 1)})
		return err
	}
	load := func() history.Snapshot {
		snap, err := s.Load(ctx, k, history.Query{MinMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	if err := onBase(load(), 1); err != nil {
		t.Fatal(err)
	}
	base := load()

	var pids []uint32
	for _, p := range []*pgxpool.Pool{s.Pool(), pgstore.BatchPool(s)} {
		for _, c := range p.AcquireAllIdle(ctx) {
			pids = append(pids, c.Conn().PgConn().PID())
			c.Release()
		}
	}
	if len(pids) < 2 {
		t.Fatalf("%d idle connections, want the pool's and the committers'", len(pids))
	}
	admin := connect(t, url)
	for _, pid := range pids {
		var gone bool // waits until the backend has exited
		if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", int32(pid)).Scan(&gone); err != nil || !gone {
			t.Fatalf("terminating %d: %v %v", pid, gone, err)
		}
	}

	if err := onBase(base, 2); err != nil {
		t.Fatalf("commit after the sessions ended: %v", err)
	}
	if _, err := s.Load(ctx, k, history.Query{}); err != nil {
		t.Fatalf("load after the sessions ended: %v", err)
	}
	if n := len(load().Tail); n != 6 {
		t.Fatalf("%d messages, want 6", n)
	}
}

// TestResendTellsALandedCommit: a change sent again after its first
// sending's answer was lost is reported committed when the first landed
// (the stored record is the one it wrote), and the first sending's error
// stands when another change moved the head.
func TestResendTellsALandedCommit(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commit(t, s, k, history.Change{Append: turns(0, 1)})
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	first := errors.New("the first sending's connection broke")
	ours := history.Change{Version: snap.Meta.Version, Base: &snap.Meta, Now: 9e9, Append: turns(1, 1)}
	landed, err := s.Commit(ctx, k, ours)
	if err != nil {
		t.Fatal(err)
	}
	again, err := pgstore.Resend(ctx, s, k, ours, first)
	if err != nil || again.Version != landed.Version {
		t.Fatalf("resending a landed change: version %d, %v; want %d, nil", again.Version, err, landed.Version)
	}

	// Another change on the same base: its record is not ours.
	theirs := ours
	theirs.Now, theirs.Append = 8e9, turns(5, 1)
	if _, err := pgstore.Resend(ctx, s, k, theirs, first); err != first {
		t.Fatalf("resending a change whose base moved under another: %v, want the first sending's error", err)
	}
	after, err := s.Load(ctx, k, history.Query{MinMessages: 100})
	if err != nil {
		t.Fatal(err)
	}
	if after.Meta.Version != landed.Version || len(after.Tail) != 4 {
		t.Fatalf("after: version %d, %d messages; want %d, 4", after.Meta.Version, len(after.Tail), landed.Version)
	}
}
