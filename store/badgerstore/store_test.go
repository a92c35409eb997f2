package badgerstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/storetest"
)

var ctx = context.Background()

// The suite's helpers, under the names the Badger-specific tests use.
var (
	user       = storetest.User
	asst       = storetest.Asst
	turns      = storetest.Turns
	mustCommit = storetest.MustCommit
)

func all(t *testing.T, s history.Store, k history.Key, all bool) []history.Message {
	t.Helper()
	return storetest.All(t, s, k, all)
}

func open(t testing.TB, dir string) *badgerstore.Store {
	t.Helper()
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store conformance suite on Badger, durable
// (through the committer, with Badger syncing its writes or the
// committer fsyncing them through AIO) and relaxed (direct commits), searching
// records not indexed yet (the folder does not run in so short a test),
// indexed ones (folded right after each commit), and both while the
// folder races the test (every two messages).
func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name    string
		noSync  bool
		backlog int
		aioSync bool
	}{
		{"durable", false, 0, false},
		{"durable, fsync through AIO", false, 0, true},
		{"relaxed", true, 0, false},
		{"durable, folded", false, -1, false},
		{"relaxed, folded", true, -1, false},
		{"durable, folding in the background", false, 2, false},
		{"relaxed, folding in the background", true, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) history.Store {
				s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: tt.noSync, IndexBacklog: tt.backlog, AIOSync: tt.aioSync})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	k := history.Key{Tenant: "t", Conversation: "c"}
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, k, history.Change{Append: turns(1, 4), Cut: 3})
	want := mustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 6, Turn: 3}, Append: turns(7, 1)})
	before, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	after, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after.Meta) != fmt.Sprint(want) || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("got %+v after reopening, want %+v", after, before)
	}
	if got := len(all(t, s, k, true)); got != 10 {
		t.Errorf("got %d messages after reopening, want 10", got)
	}
}

func BenchmarkLoadTail(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			s, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := history.Key{Tenant: "t", Conversation: "c"}
			for i := 0; i < n; i += 100 {
				mustCommit(b, s, k, history.Change{Append: turns(i, min(100, n-i))})
			}
			q := history.Query{MinMessages: 1, Tokens: 100, FromCut: true} // 5 turns
			b.ReportAllocs()
			for b.Loop() {
				snap, err := s.Load(ctx, k, q)
				if err != nil || len(snap.Tail) != 10 {
					b.Fatalf("got %d messages, %v; want 10", len(snap.Tail), err)
				}
			}
		})
	}
}

// BenchmarkLoadFromTables loads the tails of 1,000 conversations whose
// records are in the tables, not the memtable (a durable store reopened):
// the reads the block cache sat in front of (see blockCacheSize).
func BenchmarkLoadFromTables(b *testing.B) {
	dir := b.TempDir()
	s, err := badgerstore.Open(dir, badgerstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	const convs = 1000
	key := func(i int) history.Key { return history.Key{Tenant: "t", Conversation: strconv.Itoa(i)} }
	for i := range convs {
		mustCommit(b, s, key(i), history.Change{Append: turns(0, 20)})
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if s, err = badgerstore.Open(dir, badgerstore.Options{NoSync: true}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	q := history.Query{MinMessages: 1, Tokens: 100, FromCut: true}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i = (i + 7919) % convs
		if snap, err := s.Load(ctx, key(i), q); err != nil || len(snap.Tail) == 0 {
			b.Fatalf("got %d messages, %v", len(snap.Tail), err)
		}
	}
}

func BenchmarkCommit(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", !noSync), func(b *testing.B) {
			s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := history.Key{Tenant: "t", Conversation: "c"}
			turn := turns(1, 1)
			var version uint64
			b.ReportAllocs()
			for b.Loop() {
				m, err := s.Commit(ctx, k, history.Change{Version: version, Append: turn, Now: 1})
				if err != nil {
					b.Fatal(err)
				}
				version = m.Version
			}
		})
	}
}

// BenchmarkCommitConcurrent commits turns to 32 conversations at once, as
// a loaded proxy does: with durable writes, concurrent commits should
// share their fsyncs. sync=aio is the durable path `recall serve` takes
// on Linux (aio_fsync, the default).
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, mode := range []string{"true", "aio", "false"} {
		b.Run("sync="+mode, func(b *testing.B) {
			s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: mode == "false", AIOSync: mode == "aio", GroupWait: benchGroupWait})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			turn := turns(1, 1)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // 32 committers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				k := history.Key{Tenant: "t", Conversation: "c" + strconv.FormatInt(next.Add(1), 10)}
				var version uint64
				for pb.Next() {
					m, err := s.Commit(ctx, k, history.Change{Version: version, Append: turn, Now: 1})
					if err != nil {
						b.Fatal(err)
					}
					version = m.Version
				}
			})
		})
	}
}

// benchGroupWait is BenchmarkCommitConcurrent's Options.GroupWait
// (RECALL_BENCH_GROUP_WAIT, a duration; default the store's).
var benchGroupWait, _ = time.ParseDuration(os.Getenv("RECALL_BENCH_GROUP_WAIT"))

// Loads read values into a pooled buffer and copy out what they keep: a
// snapshot must own its messages, whatever loads come after it.
func TestLoadsDoNotShareMemory(t *testing.T) {
	s := open(t, t.TempDir())
	a := history.Key{Tenant: "t", Conversation: "a"}
	b := history.Key{Tenant: "t", Conversation: "b"}
	mustCommit(t, s, a, history.Change{Append: turns(0, 20)})
	var bs []history.Message
	for i := range 20 {
		bs = append(bs, user("overwrite"+strconv.Itoa(i), 10), asst("overwritten"+strconv.Itoa(i), 10))
	}
	mustCommit(t, s, b, history.Change{Append: bs})
	whole := history.Query{Tokens: 1 << 30}
	snap, err := s.Load(ctx, a, whole)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(snap.Tail))
	for i, m := range snap.Tail {
		want[i] = string(m.Raw)
	}
	for range 10 {
		if _, err := s.Load(ctx, b, whole); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range snap.Tail {
		if string(m.Raw) != want[i] {
			t.Fatalf("message %d of a changed after loads of b: %s, want %s", i, m.Raw, want[i])
		}
	}
	if len(want) != 40 {
		t.Errorf("loaded %d messages of a, want 40", len(want))
	}
}
