package badgerstore

import (
	"testing"
	"time"
)

// Relaxed writes are synced in the background every SyncEvery (the
// kernel's write-back of them stays small and steady); durable ones need
// no syncer, and SyncEvery < 0 turns it off.
func TestRelaxedWritesAreSyncedInTheBackground(t *testing.T) {
	synced := make(chan struct{}, 1)
	afterSync = func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { afterSync = nil })

	s := mustOpen(t, t.TempDir(), Options{NoSync: true, SyncEvery: time.Millisecond})
	for range 2 {
		select {
		case <-synced:
		case <-time.After(10 * time.Second):
			t.Fatal("no background sync of relaxed writes")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for _, o := range []Options{{}, {NoSync: true, SyncEvery: -1}} {
		s := mustOpen(t, t.TempDir(), o)
		select {
		case <-s.synced: // closed at Open: no syncer runs
		default:
			t.Errorf("Options %+v: a background syncer runs", o)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
