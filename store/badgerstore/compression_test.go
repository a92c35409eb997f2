package badgerstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/options"

	"github.com/recallproxy/recall/history"
)

// New tables are written plain, and a directory whose tables an earlier
// version compressed (Snappy) loads the same after the switch, while new
// commits land beside them.
func TestReadsTablesWrittenCompressed(t *testing.T) {
	dir := t.TempDir()
	k := history.Key{Tenant: "t", Conversation: "c"}
	sentence := "the request returns a list of items when the cache is empty, please explain why the handler times out "
	write := func(s *Store, from int) (raw int) {
		for i := range 20 {
			var msgs []history.Message
			for j := range 50 {
				m := userMsg(strconv.Itoa(from+i*50+j) + " " + sentence) // below valueThreshold: in the tables
				raw += len(m.Raw)
				msgs = append(msgs, m)
			}
			commitT(t, s, k, history.Change{Append: msgs})
		}
		return raw
	}
	// tableBytes flushes the memtable to a table by closing s, and
	// returns the size of the tables written since those in before.
	tableBytes := func(s *Store, before map[string]bool) (int64, map[string]bool) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
		if err != nil {
			t.Fatal(err)
		}
		size, seen := int64(0), map[string]bool{}
		for _, f := range files {
			seen[f] = true
			if before[f] {
				continue
			}
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			size += fi.Size()
		}
		return size, seen
	}

	tableCompression = options.Snappy
	t.Cleanup(func() { tableCompression = options.None })
	s := mustOpen(t, dir, Options{NoSync: true})
	raw := write(s, 0)
	size, old := tableBytes(s, nil)
	if size == 0 || size > int64(raw)/2 {
		t.Fatalf("Snappy tables of %d bytes for %d bytes of messages: want under half", size, raw)
	}

	tableCompression = options.None
	s = mustOpen(t, dir, Options{NoSync: true})
	if s.db.BlockCacheMetrics() == nil {
		t.Error("a directory with compressed tables opened without a block cache: every read would decode its block again")
	}
	raw = write(s, 1000)
	if size, _ := tableBytes(s, old); size < int64(raw) {
		t.Errorf("new tables of %d bytes for %d bytes of messages: want them plain", size, raw)
	}

	s = openT(t, dir, Options{NoSync: true})
	got := storedMessages(t, s, k, true)
	if len(got) != 2000 {
		t.Fatalf("loaded %d messages, want 2000", len(got))
	}
	for i, m := range got {
		if want := strconv.Itoa(i) + " "; !strings.Contains(string(m.Raw), `"content":"`+want) {
			t.Fatalf("message %d is %.40s, want it to start %q", i, m.Raw, want)
		}
	}
}

// Plain tables get no block cache (see blockCacheSize): a new directory,
// one whose tables are all plain, the side database, and an in-memory
// store.
func TestPlainTablesHaveNoBlockCache(t *testing.T) {
	dir := t.TempDir()
	k := history.Key{Tenant: "t", Conversation: "c"}
	s := mustOpen(t, dir, Options{NoSync: true})
	if s.db.BlockCacheMetrics() != nil || s.side.BlockCacheMetrics() != nil {
		t.Fatal("a new directory opened with a block cache")
	}
	for i := range 200 {
		commitT(t, s, k, history.Change{Append: []history.Message{userMsg("message " + strconv.Itoa(i))}})
	}
	if err := s.Close(); err != nil { // flushes the memtable to a plain table
		t.Fatal(err)
	}
	if tables, _ := filepath.Glob(filepath.Join(dir, "*.sst")); len(tables) == 0 {
		t.Fatal("no table written: the test reads nothing from one")
	}
	s = openT(t, dir, Options{NoSync: true})
	if s.db.BlockCacheMetrics() != nil {
		t.Error("a directory of plain tables opened with a block cache")
	}
	if got := storedMessages(t, s, k, true); len(got) != 200 {
		t.Errorf("loaded %d messages from the plain tables, want 200", len(got))
	}
	if m := openT(t, "", Options{InMemory: true}); m.db.BlockCacheMetrics() != nil {
		t.Error("an in-memory store opened with a block cache")
	}
}
