package history_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
	"github.com/recallproxy/recall/wire"
)

// TestCacheLoadsWhatTheStoreLoads runs random commits (turns, cut moves,
// supersedes) and random queries against a reference store and a Cache over
// a second one: every snapshot must be identical, whether served from
// memory or not.
func TestCacheLoadsWhatTheStoreLoads(t *testing.T) {
	for _, entry := range []int{1 << 30, 4 << 10, 600} { // no trimming, some, a lot
		t.Run(fmt.Sprintf("entry=%d", entry), func(t *testing.T) {
			for seed := range uint64(20) {
				checkCacheTrace(t, rand.New(rand.NewPCG(seed, uint64(entry))), entry)
			}
		})
	}
}

func checkCacheTrace(t *testing.T, rng *rand.Rand, entry int) {
	t.Helper()
	ctx := context.Background()
	ref, under := &memStore{}, &memStore{}
	cache := history.NewCache(under, 0, entry)
	k := history.Key{Tenant: "t", Conversation: "c"}
	served := 0
	for op := range 300 {
		if rng.IntN(3) == 0 {
			ch := randomChange(rng, ref)
			if _, err := ref.Commit(ctx, k, ch); err != nil {
				t.Fatal(err)
			}
			if _, err := cache.Commit(ctx, k, ch); err != nil {
				t.Fatal(err)
			}
			continue
		}
		q := history.Query{MinMessages: rng.IntN(8), Tokens: rng.IntN(400), MaxTurns: rng.IntN(4), FromCut: rng.IntN(2) == 0}
		if rng.IntN(3) == 0 { // a summary covers the oldest turns
			q.After = uint64(rng.IntN(int(ref.meta.NextSeq) + 1))
		}
		want, _ := ref.Load(ctx, k, q)
		before := under.loads
		got, err := cache.Load(ctx, k, q)
		if err != nil {
			t.Fatal(err)
		}
		if under.loads == before {
			served++
		}
		if !reflect.DeepEqual(seqs(got.Tail), seqs(want.Tail)) || got.Complete != want.Complete || !reflect.DeepEqual(got.Meta, want.Meta) {
			t.Fatalf("op %d, query %+v:\n got tail %v complete %v meta %+v\nwant tail %v complete %v meta %+v",
				op, q, seqs(got.Tail), got.Complete, got.Meta, seqs(want.Tail), want.Complete, want.Meta)
		}
		// The text too: the cache copies it into arenas of its own.
		if g, w := raws(got.Tail), raws(want.Tail); !reflect.DeepEqual(g, w) {
			t.Fatalf("op %d, query %+v: got texts %q, want %q", op, q, g, w)
		}
		if err := cache.CheckCost(); err != nil {
			t.Fatalf("op %d: %v", op, err)
		}
	}
	if entry > 1<<20 && served == 0 {
		t.Errorf("no load was served from memory")
	}
}

// randomChange appends a turn (sometimes with tool calls), sometimes moves
// the cut to a turn start, sometimes supersedes the tail after a random
// active message, sometimes lands a summary (as the summary job does:
// computed from the stored summary, naming no Version).
func randomChange(rng *rand.Rand, s *memStore) history.Change {
	if sc := randomSummary(rng, s); sc != nil && rng.IntN(6) == 0 {
		return history.Change{Summary: sc, Now: int64(s.meta.Version + 1)}
	}
	ch := history.Change{Version: s.meta.Version, Now: int64(s.meta.Version + 1), Incarnation: 1}
	var active []history.Message
	for _, m := range s.msgs {
		if m.Active() {
			active = append(active, m)
		}
	}
	if len(active) > 4 && rng.IntN(8) == 0 {
		m := active[rng.IntN(len(active))]
		ch.Supersede = &history.Boundary{Seq: m.Seq, Turn: m.Turn}
	}
	n := s.meta.NextSeq
	ch.Append = append(ch.Append, history.Tok(history.User(fmt.Sprintf("q%d", n)), 10+rng.IntN(90)))
	if rng.IntN(3) == 0 {
		id := fmt.Sprintf("call_%d", n)
		ch.Append = append(ch.Append, history.Calls("", id), history.Tok(history.Tool(id, "result"), 5+rng.IntN(200)))
	}
	ch.Append = append(ch.Append, history.Tok(history.Asst(fmt.Sprintf("a%d", n)), 10+rng.IntN(90)))
	if ch.Supersede == nil && len(active) > 0 && rng.IntN(4) == 0 {
		for _, m := range active[rng.IntN(len(active)):] {
			if m.Role == wire.RoleUser {
				ch.Cut = m.Seq
				break
			}
		}
	}
	return ch
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	store := badgertest.Open(t)
	counting := &countingStore{Store: store}
	cache := history.NewCache(counting, 2000, 0) // about 3 conversations of 2 short messages
	q := history.Query{Tokens: 1 << 20}
	for i := range 10 {
		k := history.Key{Tenant: "t", Conversation: fmt.Sprint(i)}
		if _, err := cache.Commit(ctx, k, history.Change{Append: []history.Message{history.User("hello"), history.Asst("there")}, Now: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := cache.Load(ctx, k, q); err != nil {
			t.Fatal(err)
		}
	}
	loads := counting.loads
	// The newest conversations are cached, the oldest were evicted.
	if _, err := cache.Load(ctx, history.Key{Tenant: "t", Conversation: "9"}, q); err != nil || counting.loads != loads {
		t.Errorf("newest conversation not served from memory (loads %d -> %d)", loads, counting.loads)
	}
	if _, err := cache.Load(ctx, history.Key{Tenant: "t", Conversation: "0"}, q); err != nil || counting.loads != loads+1 {
		t.Errorf("oldest conversation still cached past the byte bound (loads %d -> %d)", loads, counting.loads)
	}
}

type countingStore struct {
	history.Store
	loads int
}

func (c *countingStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	c.loads++
	return c.Store.Load(ctx, k, q)
}

// TestCacheBoundsConversationsWithoutMessages loads many distinct
// conversations that hold no message: ids never written, which must not be
// cached at all, and conversations whose every message was superseded,
// which must count at their real cost. Both used to cost 0 bytes and were
// never evicted: the heap grew without bound.
func TestCacheBoundsConversationsWithoutMessages(t *testing.T) {
	const (
		loads    = 100_000
		maxBytes = 64 << 10
	)
	tests := []struct {
		name       string
		meta       history.Meta // what the store holds for every id
		maxEntries int
	}{
		{name: "never written", meta: history.Meta{}, maxEntries: 0},
		{
			name:       "every message superseded",
			meta:       history.Meta{NextSeq: 5, Version: 3, Gaps: []history.Range{{From: 1, To: 4}}, Status: history.StatusActive},
			maxEntries: maxBytes / 128, // no entry takes less than 128 bytes
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := history.NewCache(metaStore{meta: tt.meta}, maxBytes, 0)
			for i := range loads {
				k := history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}
				if _, err := cache.Load(context.Background(), k, history.Query{Tokens: 1000}); err != nil {
					t.Fatal(err)
				}
			}
			if got := cache.Len(); got > tt.maxEntries {
				t.Errorf("got %d entries after %d loads, want at most %d", got, loads, tt.maxEntries)
			}
		})
	}
}

// TestCacheMemoryIsBounded measures the heap after loading many distinct
// empty conversations through a 1 MiB cache: it must stay within a few
// times the bound, which holds only if entries count at about their real
// size.
func TestCacheMemoryIsBounded(t *testing.T) {
	const maxBytes = 1 << 20
	cache := history.NewCache(metaStore{meta: history.Meta{NextSeq: 2, Version: 2, Gaps: []history.Range{{From: 1, To: 1}}}}, maxBytes, 0)
	load := func(from, to int) {
		for i := from; i < to; i++ {
			k := history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}
			if _, err := cache.Load(context.Background(), k, history.Query{Tokens: 1000}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Warm up to a full cache first, so that what is measured is what
	// keeps growing, not the cache filling up to its bound.
	load(0, 50_000)
	before := heapInUse()
	load(50_000, 250_000)
	after := heapInUse()
	runtime.KeepAlive(cache)
	if grown := int64(after) - int64(before); grown > maxBytes {
		t.Errorf("heap growth over 200,000 more loads: got %d bytes, want at most %d", grown, maxBytes)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestCacheKeepsWhatACommitCreated checks that a conversation loaded
// before it exists is not cached, and that the commit creating it caches
// it whole, so the next request is served from memory.
func TestCacheKeepsWhatACommitCreated(t *testing.T) {
	ctx, under, cache := memCache()
	k := history.Key{Tenant: "t", Conversation: "new"}
	if _, err := cache.Load(ctx, k, wholeWindow); err != nil {
		t.Fatal(err)
	}
	if got := cache.Len(); got != 0 {
		t.Fatalf("after loading an unknown conversation: got %d entries, want 0", got)
	}
	meta, err := cache.Commit(ctx, k, history.Change{Append: []history.Message{history.User("hello"), history.Asst("there")}, Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := cache.Len(); got != 1 {
		t.Fatalf("after the creating commit: got %d entries, want 1", got)
	}
	snap := loadFromMemory(t, cache, under, k, "the load after the commit")
	if got, want := seqs(snap.Tail), []uint64{1, 2}; !reflect.DeepEqual(got, want) || !snap.Complete || !reflect.DeepEqual(snap.Meta, meta) {
		t.Errorf("got tail %v complete %v meta %+v, want tail %v complete true meta %+v", got, snap.Complete, snap.Meta, want, meta)
	}
}

// wholeWindow is a Query for every message.
var wholeWindow = history.Query{Tokens: 1 << 20}

// memCache is a cache with no bounds over an empty memStore.
func memCache() (context.Context, *memStore, *history.Cache) {
	under := &memStore{}
	return context.Background(), under, history.NewCache(under, 0, 0)
}

// loadFromMemory loads all of k through cache and fails the test, saying
// what load it was, if that read the store under: the cache should have
// held it.
func loadFromMemory(t *testing.T, cache *history.Cache, under *memStore, k history.Key, what string) history.Snapshot {
	t.Helper()
	loads := under.loads
	snap, err := cache.Load(context.Background(), k, wholeWindow)
	if err != nil {
		t.Fatal(err)
	}
	if under.loads != loads {
		t.Errorf("%s: got %d store loads, want none: it should be served from memory", what, under.loads-loads)
	}
	return snap
}

// metaStore holds, for every key, a conversation with metadata meta and
// no active message.
type metaStore struct {
	history.Store // nil: List and Search are never called
	meta          history.Meta
}

func (s metaStore) Load(context.Context, history.Key, history.Query) (history.Snapshot, error) {
	return history.Snapshot{Meta: s.meta, Complete: true}, nil
}

func (s metaStore) Commit(context.Context, history.Key, history.Change) (history.Meta, error) {
	return history.Meta{}, history.ErrConflict
}

func (s metaStore) Messages(context.Context, history.Key, uint64, bool, func(history.Message) bool) error {
	return nil
}

func (s metaStore) Delete(context.Context, history.Key) error { return nil }

// TestCacheLeaseOverOneProcessStore: over a store that is no Leaser (one
// process), the cache's lease is held at once, and refused once ctx ended.
func TestCacheLeaseOverOneProcessStore(t *testing.T) {
	c := history.NewCache(&countingStore{}, 0, 0)
	release, ok, err := c.TryAcquire(context.Background(), "x")
	if err != nil || !ok {
		t.Fatalf("got ok %v, %v; want the lease", ok, err)
	}
	release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Acquire(ctx, "x"); err == nil {
		t.Fatal("a lease with an ended context")
	}
}

// randomSummary returns a summary of s's messages through a random one
// after the stored summary's, or nil if there is none to cover.
func randomSummary(rng *rand.Rand, s *memStore) *history.SummaryChange {
	var base uint64
	if s.meta.Summary != nil {
		base = s.meta.Summary.Through
	}
	if s.meta.NextSeq <= base+2 {
		return nil
	}
	through := base + 1 + uint64(rng.IntN(int(s.meta.NextSeq-base-2)))
	return &history.SummaryChange{Base: base, Incarnation: s.meta.Incarnation, Epoch: s.meta.Epoch,
		Summary: history.Summary{Text: fmt.Sprintf("through %d", through), Through: through, Tokens: 10}}
}

// TestCacheKeepsAConversationASummaryLandsOn: the summary job's change
// names no Version; landing on the state the entry holds, it must leave
// the entry (with the new summary) in memory, not drop it and cost the
// next request a load from the store. Landing on another state (a commit
// the cache did not see) drops it.
func TestCacheKeepsAConversationASummaryLandsOn(t *testing.T) {
	ctx, under, cache := memCache()
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 3 {
		if _, err := cache.Commit(ctx, k, history.Change{Version: under.meta.Version, Now: int64(i + 1),
			Append: []history.Message{history.User(fmt.Sprint("q", i)), history.Asst(fmt.Sprint("a", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	sc := &history.SummaryChange{Incarnation: under.meta.Incarnation, Epoch: under.meta.Epoch,
		Summary: history.Summary{Text: "the first two turns", Through: 4, Tokens: 5}}
	meta, err := cache.Commit(ctx, k, history.Change{Summary: sc, Now: 9})
	if err != nil {
		t.Fatal(err)
	}
	snap := loadFromMemory(t, cache, under, k, "the load after the summary landed")
	if !reflect.DeepEqual(snap.Meta, meta) || snap.Meta.Summary == nil || snap.Meta.Summary.Text != "the first two turns" {
		t.Errorf("got meta %+v, want the store's %+v", snap.Meta, meta)
	}
	if got, want := seqs(snap.Tail), []uint64{1, 2, 3, 4, 5, 6}; !reflect.DeepEqual(got, want) {
		t.Errorf("got tail %v, want %v", got, want)
	}

	// A commit the cache did not see, then a summary on top of it: the
	// entry no longer holds the state the summary landed on.
	if _, err := under.Commit(ctx, k, history.Change{Version: under.meta.Version, Now: 10,
		Append: []history.Message{history.User("q3"), history.Asst("a3")}}); err != nil {
		t.Fatal(err)
	}
	sc = &history.SummaryChange{Base: 4, Incarnation: under.meta.Incarnation, Epoch: under.meta.Epoch,
		Summary: history.Summary{Text: "four turns", Through: 6, Tokens: 5}}
	if _, err := cache.Commit(ctx, k, history.Change{Summary: sc, Now: 11}); err != nil {
		t.Fatal(err)
	}
	if got := cache.Len(); got != 0 {
		t.Errorf("got %d entries after a summary landed on a state the cache did not hold, want 0", got)
	}
}
