package badgerstore

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// watchFolds makes s's folder report each fold's error on the returned
// channel.
func watchFolds(s *Store) <-chan error {
	folds := make(chan error, 16)
	s.afterFold = func(err error) { folds <- err }
	return folds
}

// nextFold waits for the folder's next fold, with a deadline.
func nextFold(t *testing.T, folds <-chan error) error {
	t.Helper()
	select {
	case err := <-folds:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the folder did not fold within 10 s")
		return nil
	}
}

// indexedT reports whether every record of k's conversation is behind its
// search watermark.
func indexedT(t *testing.T, s *Store, k history.Key) bool {
	t.Helper()
	var done bool
	err := s.db.View(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, convPrefix(k))
		if err != nil {
			return err
		}
		tot, err := readTotals(txn, k)
		done = m.NextSeq > 1 && tot.from() >= m.NextSeq
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// turnT commits a question and an answer to k.
func turnT(t *testing.T, s *Store, k history.Key, words string) {
	t.Helper()
	commitT(t, s, k, history.Change{Append: []history.Message{
		textMsg("user", words+" question"), textMsg("assistant", words+" answer")}})
}

// The folder folds the conversations that commits noted since it last
// woke, without listing every conversation's entry as Fold does (Open's
// fold is the only listing).
func TestFolderFoldsWhatCommitsNoted(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 4})
	s.pause = func(time.Duration) {}
	folds := watchFolds(s)
	a, b := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "u", Conversation: "b"}
	turnT(t, s, a, "alpha")
	turnT(t, s, b, "beta") // the fourth message wakes the folder
	if err := nextFold(t, folds); err != nil {
		t.Fatal(err)
	}
	for _, k := range []history.Key{a, b} {
		if !indexedT(t, s, k) {
			t.Errorf("%s: records left past the watermark after the folder's fold", k)
		}
	}
	if n := s.scans.Load(); n != 1 {
		t.Errorf("listings of dirty conversations: got %d, want 1 (Open's)", n)
	}
}

// What a failed fold took is folded by the next one.
func TestFolderRetriesWhatAFailedFoldTook(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 2})
	s.pause = func(time.Duration) {}
	var failed atomic.Bool
	s.failFoldCommit = func() error {
		if failed.CompareAndSwap(false, true) {
			return errors.New("injected")
		}
		return nil
	}
	folds := watchFolds(s)
	a, b := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}
	turnT(t, s, a, "alpha")
	if err := nextFold(t, folds); err == nil {
		t.Fatal("the first fold did not fail")
	}
	turnT(t, s, b, "beta")
	if err := nextFold(t, folds); err != nil {
		t.Fatal(err)
	}
	for _, k := range []history.Key{a, b} {
		if !indexedT(t, s, k) {
			t.Errorf("%s: records left past the watermark", k)
		}
	}
}

// The pacer pauses once a burst of time on the core is spent, for as
// long as keeps the work to its share; a nil pacer never pauses.
func TestPacerKeepsItsShare(t *testing.T) {
	var pauses []time.Duration
	p := &pacer{share: 0.25, burst: foldBurst, pause: func(d time.Duration) { pauses = append(pauses, d) }}
	p.spent(time.Millisecond)
	if len(pauses) != 0 {
		t.Fatalf("paused after 1 ms, under the burst: %v", pauses)
	}
	p.spent(1500 * time.Microsecond)
	p.spent(3 * time.Millisecond)
	want := []time.Duration{7500 * time.Microsecond, 9 * time.Millisecond}
	if len(pauses) != 2 || pauses[0] != want[0] || pauses[1] != want[1] {
		t.Fatalf("pauses: got %v, want %v", pauses, want)
	}
	var none *pacer
	none.spent(time.Hour)

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Store{}
	if p := s.newPacer(); p == nil || p.share != foldShare {
		t.Errorf("one processor: got pacer %+v, want share %v", p, foldShare)
	}
	runtime.GOMAXPROCS(int(1 / foldShare))
	if p := s.newPacer(); p != nil {
		t.Errorf("%d processors: got pacer %+v, want none", int(1/foldShare), p)
	}
}

// On one CPU the second P internal/procs adds while a computation holds
// the first is no second core: the folder keeps a quarter of the one CPU
// instead of taking half of two Ps.
func TestPacerCountsCPUsNotExtraPs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tc := range []struct {
		name  string
		cpus  int
		share float64 // 0: no pacer
	}{
		{"two Ps on one CPU", 1, foldShare},
		{"two Ps on two CPUs", 2, 2 * foldShare},
		{"two Ps, the CPUs not counted", 0, 2 * foldShare},
		{"two Ps on eight CPUs", 8, 2 * foldShare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{cpus: tc.cpus}
			if p := s.newPacer(); p == nil || p.share != tc.share {
				t.Errorf("got pacer %+v, want share %v", p, tc.share)
			}
		})
	}
	if s := openT(t, t.TempDir(), Options{}); s.cpus != runtime.NumCPU() {
		t.Errorf("an opened store counts %d CPUs, want runtime.NumCPU's %d", s.cpus, runtime.NumCPU())
	}
}

// bulkT commits n turns of prose to k.
func bulkT(t *testing.T, s *Store, k history.Key, n int) {
	t.Helper()
	words := strings.Repeat("the fold analyses every word of every message it indexes ", 8)
	for i := range n {
		turnT(t, s, k, words+strconv.Itoa(i))
	}
}

// With one processor the folder pauses, each time for three times what
// it spent on the core (its share is a quarter); Fold, which Open and
// Close call and callers wait for, never does.
// The burst is shortened to a microsecond: how long folding 400 messages
// takes on the core depends on the machine (on a fast one, under the
// 2 ms burst).
func TestFolderPausesOnOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	var mu sync.Mutex
	var pauses []time.Duration
	s.burst = time.Microsecond
	s.pause = func(d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	bulkT(t, s, k, 200)
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(pauses) != 0 {
		t.Fatalf("Fold paused: %v", pauses)
	}
	mu.Unlock()

	s.indexBacklog = 400
	s.backlog.Store(0) // the first 400 messages counted
	folds := watchFolds(s)
	bulkT(t, s, k, 200)
	if err := nextFold(t, folds); err != nil {
		t.Fatal(err)
	}
	if !indexedT(t, s, k) {
		t.Fatal("records left past the watermark")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pauses) == 0 {
		t.Fatal("the folder folded 400 messages without a pause")
	}
	for _, d := range pauses {
		if d < 3*s.burst {
			t.Errorf("paused %v, under three bursts (%v)", d, 3*s.burst)
		}
	}
}

// Close does not wait out the folder's pauses: it folds what is left at
// once.
func TestCloseCutsTheFolderPauseShort(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := mustOpen(t, t.TempDir(), Options{IndexBacklog: 400})
	// A microsecond's burst, as in TestFolderPausesOnOneProcessor: the
	// fold of 400 messages takes under the 2 ms burst on a warm machine,
	// and then never pauses.
	s.burst = time.Microsecond
	paused := make(chan struct{}, 1)
	s.pause = func(time.Duration) {
		select {
		case paused <- struct{}{}:
		default:
		}
		s.pauseFold(time.Hour)
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	bulkT(t, s, k, 200)
	select {
	case <-paused:
	case <-time.After(10 * time.Second):
		t.Fatal("the folder did not pause within 10 s")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the folder's hour-long pause")
	}
}
