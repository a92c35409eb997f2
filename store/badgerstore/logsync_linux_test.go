package badgerstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/recallproxy/recall/history"
)

// The committer fsyncs every memtable log and the newest value log
// Badger has: after each durable commit, every such file in the directory
// is one it syncs, through several memtable rotations. A Badger that
// named or numbered its logs otherwise would fail here, not lose writes.
func TestLogSyncTracksBadgersFiles(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{IndexBacklog: 1 << 30, AIOSync: true})
	if s.logs == nil {
		t.Fatal("durable store without a logSync: AIO unavailable?")
	}
	files := func(ext string) []uint64 {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ext); ok {
				id, err := strconv.ParseUint(n, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", e.Name(), err)
				}
				ids = append(ids, id)
			}
		}
		return ids
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	text := strings.Repeat("x", 200) // below valueThreshold: memtable entries
	var version uint64
	rotations, last := 0, uint64(0)
	for i := 0; rotations < 3; i++ {
		if i == 2000 {
			t.Fatalf("no third memtable rotation after %d commits", i)
		}
		msgs := make([]history.Message, 256)
		for j := range msgs {
			msgs[j] = textMsg("user", text)
		}
		m := commitT(t, s, k, history.Change{Version: version, Append: msgs})
		version = m.Version
		mem := files(".mem")
		if s.logs.mem.fd < 0 || s.logs.mem.id != slices.Max(mem) {
			t.Fatalf("commit %d: synced memtable log %+v, newest of %v", i, s.logs.mem, mem)
		}
		if v := files(".vlog"); len(v) == 0 || s.logs.vlog.fd < 0 || s.logs.vlog.id != slices.Max(v) {
			t.Fatalf("commit %d: synced value log %+v, newest of %v", i, s.logs.vlog, v)
		}
		if len(s.logs.retired) > 0 {
			t.Fatalf("commit %d: retired logs not synced and closed: %v", i, s.logs.retired)
		}
		if newest := slices.Max(mem); newest != last {
			if last != 0 {
				rotations++
				if s.logs.retiredSyncs < rotations {
					t.Fatalf("commit %d: rotation %d, but %d rotated logs synced once more", i, rotations, s.logs.retiredSyncs)
				}
			}
			last = newest
		}
	}
}

// A durable commit is acknowledged only once its fsync succeeded.
func TestCommitFailsWhenItsSyncFails(t *testing.T) {
	s := openT(t, t.TempDir(), Options{AIOSync: true})
	if s.logs == nil {
		t.Fatal("durable store without a logSync")
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "synced")}})
	// A descriptor fsync refuses (a pipe's: EINVAL) in place of a log.
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	s.logs.retired = append(s.logs.retired, logFile{fd: p[0]}) // closed with the store
	if _, err := s.Commit(context.Background(), k, history.Change{Version: 1, Append: []history.Message{textMsg("user", "not synced")}}); err == nil {
		t.Fatal("commit acknowledged though its fsync failed")
	}
}

func TestAIOFsync(t *testing.T) {
	a, err := newAIO()
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	var fds []int
	for i := range 100 { // more than one batch
		f, err := os.Create(filepath.Join(t.TempDir(), strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString("data"); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, int(f.Fd()))
	}
	if err := a.fsync(fds); err != nil {
		t.Fatalf("fsync of %d files: %v", len(fds), err)
	}
	if err := a.fsync([]int{fds[0], 1 << 20}); err == nil {
		t.Fatal("fsync of a descriptor that is not open: no error")
	}
	if err := a.fsync(fds[:3]); err != nil {
		t.Fatalf("after an error: %v", err)
	}
}

// TestReapParksWhenAYieldComesStraightBack: a wait whose yield finds
// nothing else to run parks after that one yield instead of polling
// again aioSpins times; while yields find other goroutines to run, it
// polls between them, aioSpins times at most, then parks.
func TestReapParksWhenAYieldComesStraightBack(t *testing.T) {
	for _, tc := range []struct {
		name          string
		away          time.Duration // each yield's
		doneAt        int           // the poll that finds the completion
		polls, yields int
		parks         int
	}{
		{name: "idle scheduler", away: 0, doneAt: 3, polls: 3, yields: 1, parks: 2},
		{name: "busy scheduler, done while yielding", away: time.Millisecond, doneAt: 4, polls: 4, yields: 3, parks: 0},
		{name: "busy scheduler, not done after the yields", away: time.Millisecond, doneAt: aioSpins + 3, polls: aioSpins + 3, yields: aioSpins, parks: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var polls, yields, parks int
			poll := func(n int) (int, error) {
				if polls++; polls == tc.doneAt {
					return n, nil
				}
				return 0, nil
			}
			yield := func() time.Duration { yields++; return tc.away }
			park := func() error { parks++; return nil }
			if err := reap(1, poll, yield, park); err != nil {
				t.Fatal(err)
			}
			if polls != tc.polls || yields != tc.yields || parks != tc.parks {
				t.Errorf("polls %d, yields %d, parks %d; want %d, %d, %d", polls, yields, parks, tc.polls, tc.yields, tc.parks)
			}
		})
	}
}

// A durable store opened on a data directory that does not exist yet
// (`recall serve` on a new machine) syncs through AIO from the start,
// not through Badger's SyncWrites until it is opened again.
func TestFreshDirectorySyncsThroughAIO(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "new", "data"), Options{AIOSync: true})
	if s.logs == nil {
		t.Fatal("a durable store on a fresh directory has no logSync: Badger's SyncWrites syncs it")
	}
	commitT(t, s, history.Key{Tenant: "t", Conversation: "c"}, history.Change{Append: []history.Message{textMsg("user", "synced")}})
}
