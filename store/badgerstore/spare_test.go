package badgerstore_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// A free-space reading far above the floor is reused for a quarter of a
// second; near the floor, or older, CanCommit reads again.
func TestFreeSpaceReadingIsReused(t *testing.T) {
	var free, reads atomic.Int64
	free.Store(1 << 30)
	now := time.Unix(1000, 0)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	o := badgerstore.Options{MinFreeBytes: 64 << 20,
		FreeBytes: func(string) (int64, error) { reads.Add(1); return free.Load(), nil },
		Now:       func() time.Time { return *clock.Load() }}
	s, err := badgerstore.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(d time.Duration) { t2 := now.Add(d); clock.Store(&t2) }

	at(time.Second)
	if err := s.CanCommit(); err != nil {
		t.Fatalf("CanCommit with a GiB free: %v", err)
	}
	before := reads.Load()
	free.Store(10 << 20) // the file system fills meanwhile
	at(time.Second + 200*time.Millisecond)
	if err := s.CanCommit(); err != nil {
		t.Fatalf("CanCommit 200 ms after a reading of a GiB: got %v, want the reading reused", err)
	}
	if got := reads.Load() - before; got != 0 {
		t.Fatalf("statfs calls within 250 ms of a reading far above the floor: got %d, want 0", got)
	}
	at(time.Second + 250*time.Millisecond)
	if err := s.CanCommit(); !errors.Is(err, history.ErrNoSpace) {
		t.Fatalf("CanCommit 250 ms after the reading: got %v, want ErrNoSpace from a new one", err)
	}

	// Near the floor (under five floors free) every check reads again.
	free.Store(200 << 20)
	at(2 * time.Second)
	if err := s.CanCommit(); err != nil {
		t.Fatalf("CanCommit with 200 MiB free: %v", err)
	}
	free.Store(10 << 20)
	if err := s.CanCommit(); !errors.Is(err, history.ErrNoSpace) {
		t.Fatalf("CanCommit at once after a reading near the floor: got %v, want ErrNoSpace", err)
	}
}
