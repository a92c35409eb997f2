package history_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/badgerstore"
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
	}
	if entry > 1<<20 && served == 0 {
		t.Errorf("no load was served from memory")
	}
}

// randomChange appends a turn (sometimes with tool calls), sometimes moves
// the cut to a turn start, sometimes supersedes the tail after a random
// active message.
func randomChange(rng *rand.Rand, s *memStore) history.Change {
	ch := history.Change{Version: s.meta.Version, Now: int64(s.meta.Version + 1)}
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
			if m.Role == history.RoleUser {
				ch.Cut = m.Seq
				break
			}
		}
	}
	return ch
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	store, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	counting := &countingStore{Store: store}
	cache := history.NewCache(counting, 1000, 0) // about 3 conversations
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
