package pgstore_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestLeaseWritesCommitLazily: every statement that writes a lease row
// on its own (a take, in a read's statement or alone, a place in the
// queue, a renewal, a release) turns synchronous_commit off for its
// transaction, so that it returns without waiting for the WAL's flush;
// the lease's free in a commit's transaction (FreeRowSQL) leaves the
// commit as durable as it was. Each statement runs in a transaction of
// its own, rolled back, on a lease table holding "held" (holder "h") and
// its queue row "next held" (Store "s").
func TestLeaseWritesCommitLazily(t *testing.T) {
	url := pgtest.DB(t)
	open(t, url, pgstore.Options{}) // migrates
	c := connect(t, url)
	ctx := testCtx(t)
	if _, err := c.Exec(ctx, `INSERT INTO recall_leases (name, holder, expires_at) VALUES
  ('held', 'h', clock_timestamp() + interval '1 minute'), ('next held', 's', clock_timestamp() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	const us, place = int64(15e6), int64(1e6)
	load := []any{"t", "c", int64(0), 10, false}
	follow := []any{"t", "c", int64(0), 10, int64(0), int32(0), int64(0)}
	for _, tc := range []struct {
		name string
		sql  string
		args []any
		want string
	}{
		{"take a free lease", pgstore.TakeSQL, []any{"free", "h2", us, "s2", false, place}, "off"},
		{"queue for a held lease", pgstore.TakeSQL, []any{"held", "h2", us, "s", true, place}, "off"},
		{"load taking a lease", pgstore.TakingSQL[0], append(load, "free", "h2", us), "off"},
		{"follow taking a lease", pgstore.TakingSQL[1], append(follow, "free", "h2", us), "off"},
		{"renew", pgstore.RenewSQL, []any{"held", "h", us}, "off"},
		{"release", pgstore.ReleaseSQL, []any{"held", "h"}, "off"},
		{"unqueue", pgstore.UnqueueSQL, []any{"held", "s"}, "off"},
		{"free in a commit", pgstore.FreeRowSQL, []any{"held", "h"}, "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			tag, err := tx.Exec(ctx, tc.sql, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			var wrote bool
			if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&wrote); err != nil {
				t.Fatal(err)
			}
			if !wrote {
				t.Fatalf("%s wrote no lease row (%s)", tc.name, tag)
			}
			var got string
			if err := tx.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("synchronous_commit after %s: got %s, want %s", tc.name, got, tc.want)
			}
		})
	}
}
