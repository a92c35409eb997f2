package badgerstore_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// Below the free-space floor commits are refused with ErrNoSpace, and a
// store opened below it opens read-only and still serves what it holds.
func TestFreeSpaceFloor(t *testing.T) {
	dir := t.TempDir()
	var free atomic.Int64
	free.Store(1 << 30)
	// Each reading is a second after the last: none is reused (see
	// TestFreeSpaceReadingIsReused).
	var tick atomic.Int64
	o := badgerstore.Options{MinFreeBytes: 64 << 20, FreeBytes: func(string) (int64, error) { return free.Load(), nil },
		Now: func() time.Time { return time.Unix(tick.Add(1), 0) }}
	s, err := badgerstore.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	mustCommit(t, s, k, history.Change{Append: []history.Message{user("q1", 5), asst("a1", 5)}})
	if err := s.CanCommit(); err != nil {
		t.Fatalf("CanCommit with room: got %v, want nil", err)
	}
	free.Store(10 << 20)
	if err := s.CanCommit(); !errors.Is(err, history.ErrNoSpace) {
		t.Fatalf("CanCommit below the floor: got %v, want ErrNoSpace", err)
	}
	snap, _ := s.Load(ctx, k, history.Query{})
	if _, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{user("q2", 5)}}); !errors.Is(err, history.ErrNoSpace) {
		t.Fatalf("Commit below the floor: got %v, want ErrNoSpace", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = badgerstore.Open(dir, o)
	if err != nil {
		t.Fatalf("open below the floor: %v", err)
	}
	defer s.Close()
	if !s.ReadOnly() {
		t.Error("got a writable store below the floor, want read-only")
	}
	if snap, err := s.Load(ctx, k, history.Query{}); err != nil || len(snap.Tail) != 2 {
		t.Fatalf("load read-only: got %d messages, %v; want 2", len(snap.Tail), err)
	}
	free.Store(1 << 30) // room again: still read-only until reopened
	if _, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{user("q2", 5)}}); !errors.Is(err, history.ErrNoSpace) {
		t.Fatalf("Commit on a read-only store: got %v, want ErrNoSpace", err)
	}
}
