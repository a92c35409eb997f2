package pgstore_test

import (
	"errors"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestDatabaseGone: with the server stopped or killed, every call fails
// with history.ErrUnavailable; once it is back, the same store works
// again on its own, and every acknowledged commit is there.
func TestDatabaseGone(t *testing.T) {
	ctx := testCtx(t)
	srv := pgtest.Start(t)
	s := open(t, srv.NewDB(t), pgstore.Options{MaxConns: 4})
	k := history.Key{Tenant: "t", Conversation: "c"}
	acked := commit(t, s, k, history.Change{Append: turns(0, 1)}).Version
	for _, stop := range []struct {
		name string
		fn   func()
	}{{"stopped", srv.Stop}, {"killed", srv.Kill}} {
		stop.fn()
		_, err := s.Commit(ctx, k, history.Change{Version: acked, Now: 9e9, Append: turns(1, 1)})
		if !errors.Is(err, history.ErrUnavailable) {
			t.Fatalf("%s: Commit got %v, want ErrUnavailable", stop.name, err)
		}
		if _, err := s.Load(ctx, k, history.Query{}); !errors.Is(err, history.ErrUnavailable) {
			t.Fatalf("%s: Load got %v, want ErrUnavailable", stop.name, err)
		}
		if err := s.Ping(ctx); !errors.Is(err, history.ErrUnavailable) {
			t.Fatalf("%s: Ping got %v, want ErrUnavailable", stop.name, err)
		}
		if _, _, err := s.TryAcquire(ctx, "x"); !errors.Is(err, history.ErrUnavailable) {
			t.Fatalf("%s: TryAcquire got %v, want ErrUnavailable", stop.name, err)
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("%s, then back: Ping got %v", stop.name, err)
		}
		acked = commit(t, s, k, history.Change{Append: turns(int(acked)*10, 1)}).Version
	}
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 100})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Meta.Version != acked || len(snap.Tail) != 2*int(acked) {
		t.Fatalf("got version %d with %d messages, want %d with %d", snap.Meta.Version, len(snap.Tail), acked, 2*acked)
	}
}

// TestUnavailableIsNotConflict: errors the server answers for the
// statement are not "unavailable".
func TestUnavailableIsNotConflict(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	_, err := s.Pool().Exec(ctx, "SELECT * FROM no_such_table")
	if err == nil || pgstore.Unavailable(err) {
		t.Fatalf("a missing table: got %v, Unavailable %v; want an error that is not", err, pgstore.Unavailable(err))
	}
	if pgstore.Unavailable(ctx.Err()) || pgstore.Unavailable(nil) {
		t.Fatal("nil or a live context is unavailable")
	}
}
