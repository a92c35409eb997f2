package badgerstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/recallproxy/recall/history"
)

// A durable group is written while the group before it waits for its
// fsync, and is answered only after a sync that began after its write:
// the committer no longer waits for the disk between two groups.
func TestGroupWrittenWhileTheLastSyncs(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30, AIOSync: true})
	if s.logs == nil {
		t.Fatal("durable store without a logSync: AIO unavailable?")
	}
	written := make(chan struct{}, 4)
	syncing, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the store's Close
	var syncs atomic.Int32
	s.afterGroupWrite = func() { written <- struct{}{} }
	s.beforeLogSync = func() {
		if syncs.Add(1) == 1 {
			close(syncing)
			<-release
		}
	}
	type answer struct {
		err   error
		syncs int32 // syncs begun when it was answered
	}
	commit := func(conv string) <-chan answer {
		out := make(chan answer, 1)
		go func() {
			k := history.Key{Tenant: "t", Conversation: conv}
			_, err := s.Commit(context.Background(), k, history.Change{Append: []history.Message{textMsg("user", "hello "+conv)}, Now: 1})
			out <- answer{err, syncs.Load()}
		}()
		return out
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s within 10s", what)
		}
	}

	a := commit("a")
	wait(written, "write of the first group")
	wait(syncing, "sync of the first group")
	b := commit("b")
	wait(written, "write of the second group while the first one's sync is held")
	select {
	case got := <-a:
		t.Fatalf("first commit answered before its sync ended: %+v", got)
	case got := <-b:
		t.Fatalf("second commit answered before its sync ended: %+v", got)
	default:
	}
	releaseOnce.Do(func() { close(release) })
	for name, c := range map[string]<-chan answer{"a": a, "b": b} {
		select {
		case got := <-c:
			if got.err != nil {
				t.Fatalf("commit %s: %v", name, got.err)
			}
			if name == "b" && got.syncs < 2 {
				t.Fatalf("commit b answered after %d sync(s): the one that began before its write covered it", got.syncs)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("commit %s not answered within 10s of the sync's release", name)
		}
	}
}

// Options.OnSync hears of each durable group's log sync before the
// group's commits are answered, and of none without durable writes.
func TestOnSyncSeesEachLogSync(t *testing.T) {
	for _, tt := range []struct {
		name    string
		o       Options
		atLeast int32
	}{
		{"durable", Options{IndexBacklog: 1 << 30, AIOSync: true}, 1},
		{"no sync", Options{IndexBacklog: 1 << 30, AIOSync: true, NoSync: true}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var syncs atomic.Int32
			tt.o.OnSync = func(d time.Duration) {
				if d < 0 {
					t.Errorf("a sync of %v", d)
				}
				syncs.Add(1)
			}
			s := openT(t, t.TempDir(), tt.o)
			if !tt.o.NoSync && s.logs == nil {
				t.Fatal("durable store without a logSync: AIO unavailable?")
			}
			for i := range 3 {
				k := history.Key{Tenant: "t", Conversation: string(rune('a' + i))}
				if _, err := s.Commit(context.Background(), k, history.Change{Append: []history.Message{textMsg("user", "hello")}, Now: 1}); err != nil {
					t.Fatal(err)
				}
				if got := syncs.Load(); tt.atLeast > 0 && got < int32(i+1) {
					t.Fatalf("commit %d answered after %d syncs heard, want %d", i+1, got, i+1)
				}
			}
			if tt.atLeast == 0 && syncs.Load() != 0 {
				t.Errorf("%d syncs heard without durable writes", syncs.Load())
			}
		})
	}
}

// A group written while the sync before it is under way has its own sync
// begin at once, not after that one ends; it is answered only after that
// one ends too, and fails if that one's fsync failed (it may have taken
// the files Badger rotated away from, which hold the group's writes).
func TestGroupSyncBeginsWhileTheLastIsUnderWay(t *testing.T) {
	for _, firstFails := range []bool{false, true} {
		t.Run(map[bool]string{false: "first synced", true: "first fails"}[firstFails], func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30, AIOSync: true})
			if s.logs == nil {
				t.Fatal("durable store without a logSync: AIO unavailable?")
			}
			began, _, release := holdFirstSync(t, s)
			if firstFails {
				// A descriptor fsync refuses (a pipe's: EINVAL), among the
				// files the first sync takes.
				p := make([]int, 2)
				if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { unix.Close(p[1]) })
				s.logs.mu.Lock()
				s.logs.retired = append(s.logs.retired, logFile{fd: p[0]}) // closed with the store
				s.logs.mu.Unlock()
			}
			a := commitLater(s, "a")
			within(t, began, "sync of the first group")
			b := commitLater(s, "b")
			within(t, began, "sync of the second group while the first one's is under way")
			select {
			case err := <-b:
				t.Fatalf("second commit answered (%v) before the sync begun before its own ended", err)
			default:
			}
			release()
			for name, c := range map[string]<-chan error{"a": a, "b": b} {
				err := within(t, c, "answer to commit "+name+" after the sync's release")
				if firstFails && err == nil {
					t.Fatalf("commit %s acknowledged though the first sync's fsync failed", name)
				}
				if !firstFails && err != nil {
					t.Fatalf("commit %s: %v", name, err)
				}
			}
		})
	}
}

// Groups written while a sync is under way wait for it to end (within
// the hold) and then share one sync, instead of each having a sync begin
// beside it: a sync costs its fsyncs whatever it covers.
func TestGroupsWrittenDuringASyncShareTheNext(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30, AIOSync: true})
	if s.logs == nil {
		t.Fatal("durable store without a logSync: AIO unavailable?")
	}
	s.syncHold = time.Hour // the first sync ends first, whenever that is
	began, syncs, release := holdFirstSync(t, s)
	written := make(chan struct{}, 4)
	s.afterGroupWrite = func() { written <- struct{}{} }
	a := commitLater(s, "a")
	within(t, written, "write of the first group")
	within(t, began, "sync of the first group")
	b := commitLater(s, "b")
	within(t, written, "write of the second group")
	c := commitLater(s, "c")
	within(t, written, "write of the third group")
	select {
	case n := <-began:
		t.Fatalf("sync %d began while the first was under way", n)
	default:
	}
	release()
	for name, ch := range map[string]<-chan error{"a": a, "b": b, "c": c} {
		if err := within(t, ch, "answer to commit "+name+" after the sync's release"); err != nil {
			t.Fatalf("commit %s: %v", name, err)
		}
	}
	if n := syncs.Load(); n != 2 {
		t.Errorf("%d syncs for three groups, two written during the first's sync: want 2", n)
	}
}

// commitLater commits a message to conversation conv in the background
// and returns the channel its error comes on.
func commitLater(s *Store, conv string) <-chan error {
	out := make(chan error, 1)
	go func() {
		k := history.Key{Tenant: "t", Conversation: conv}
		_, err := s.Commit(context.Background(), k, history.Change{Append: []history.Message{textMsg("user", "hello "+conv)}, Now: 1})
		out <- err
	}()
	return out
}

// within returns what comes on c, or fails the test after 10s.
func within[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
		panic("unreachable")
	}
}

// holdFirstSync makes s's log syncs say when they begin (their number,
// from 1, on began) and holds the first until release is called (by the
// test's cleanup at the latest, before the store's Close).
func holdFirstSync(t *testing.T, s *Store) (began <-chan int32, syncs *atomic.Int32, release func()) {
	c := make(chan int32, 4)
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	t.Cleanup(release)
	syncs = new(atomic.Int32)
	s.beforeLogSync = func() {
		n := syncs.Add(1)
		c <- n
		if n == 1 {
			<-held
		}
	}
	return c, syncs, release
}
