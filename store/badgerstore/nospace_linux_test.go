package badgerstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// On a real, small file system the floor keeps Badger from writing into a
// full one (which kills the process with SIGBUS, on every restart too):
// commits stop with ErrNoSpace, every committed turn survives, and the
// store reopens read-only. It needs root to mount a tmpfs.
func TestFullTmpfsStopsCommitsAndReopens(t *testing.T) {
	dir := mountTmpfs(t, "size=100m", "; TestFreeSpaceFloor covers the rule with an injected free-space function")
	// The floor must cover what Badger writes between two commits: a
	// memtable's write-ahead log filling up and its flush to a table (16
	// MiB each here), plus one commit.
	o := badgerstore.Options{MinFreeBytes: 48 << 20}
	s, err := badgerstore.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	k := history.Key{Tenant: "t", Conversation: "big"}
	text := strings.Repeat("x", 200<<10)
	committed := 0
	for i := 0; i < 2000; i++ {
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Now: int64(i + 1),
			Append: []history.Message{user(text, 10), asst("ok", 1)}})
		if errors.Is(err, history.ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		committed++
	}
	if committed == 0 || committed == 2000 {
		t.Fatalf("committed %d turns, want some and then ErrNoSpace", committed)
	}
	if err := s.Close(); err != nil {
		t.Logf("close on a nearly full file system: %v", err)
	}
	// Closing flushed and removed the write-ahead log, which may have freed
	// room again: fill the file system back to below the floor.
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free >= o.MinFreeBytes {
		ballast := make([]byte, free-o.MinFreeBytes+(1<<20))
		if err := os.WriteFile(filepath.Join(dir, "ballast"), ballast, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err = badgerstore.Open(dir, o)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	if !s.ReadOnly() {
		t.Error("got a writable store on a full file system, want read-only")
	}
	n := 0
	if err := s.Messages(ctx, k, 0, false, func(history.Message) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 2*committed {
		t.Errorf("got %d messages after reopening, want %d", n, 2*committed)
	}
}
