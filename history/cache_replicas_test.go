package history_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/recallproxy/recall/history"
)

// sharedStore is one store two processes' caches sit over (replicas on
// one database): a HeadReader that is never this process's alone, which
// counts the loads that read only what follows a message (the cache's
// catching up) apart from the others.
type sharedStore struct {
	*soleStore
	after, full int
	moved       int // Follow calls that found the head moved
}

func (s *sharedStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	if q.Tokens == math.MaxInt {
		s.after++
	} else {
		s.full++
	}
	return s.soleStore.Load(ctx, k, q)
}

// TestCacheFollowsAnotherWriter runs random commits through two caches
// over one store, as two replicas make them (turns, supersedes, cut
// moves, summaries, hard forgets), and random loads through either: each
// snapshot must be the store's own. A cache that finds the conversation
// moved by the other reads only what was appended since its newest
// message, unless the other took messages out of every context.
// Over a Follower, the head and what followed it come in one read.
func TestCacheFollowsAnotherWriter(t *testing.T) {
	for _, follower := range []bool{false, true} {
		t.Run(fmt.Sprintf("follower=%v", follower), func(t *testing.T) {
			caughtUp := 0
			for seed := range uint64(30) {
				caughtUp += checkReplicasTrace(t, rand.New(rand.NewPCG(seed, 7)), follower)
			}
			if caughtUp == 0 {
				t.Errorf("no cache caught up with the other's appends by reading them alone")
			}
		})
	}
}

// followingStore is a sharedStore that is a Follower too.
type followingStore struct{ *sharedStore }

func (s followingStore) Follow(ctx context.Context, k history.Key, h history.Head, after uint64, _ *history.ExchangeLease) (history.Head, *history.Snapshot, error) {
	head := history.HeadOf(&s.meta)
	if head.Same(h) {
		return head, nil, nil
	}
	s.moved++
	snap, err := s.soleStore.Load(ctx, k, history.Query{After: after, Tokens: math.MaxInt})
	return head, &snap, err
}

func checkReplicasTrace(t *testing.T, rng *rand.Rand, follower bool) (caughtUp int) {
	t.Helper()
	ctx := context.Background()
	shared := &sharedStore{soleStore: &soleStore{memStore: &memStore{}}}
	var store history.Store = shared
	if follower {
		store = followingStore{shared}
	}
	replicas := []*history.Cache{history.NewCache(store, 0, 0), history.NewCache(store, 0, 0)}
	k := history.Key{Tenant: "t", Conversation: "c"}
	for op := range 300 {
		c := replicas[rng.IntN(2)]
		if rng.IntN(3) == 0 {
			ch := randomChange(rng, shared.memStore)
			if rng.IntN(10) == 0 {
				ch = randomForget(rng, shared.memStore)
			}
			if _, err := c.Commit(ctx, k, ch); err != nil {
				t.Fatal(err)
			}
			continue
		}
		q := history.Query{MinMessages: rng.IntN(8), Tokens: rng.IntN(400), MaxTurns: rng.IntN(4), FromCut: rng.IntN(2) == 0}
		want, _ := shared.memStore.Load(ctx, k, q)
		after, full, moved, heads := shared.after, shared.full, shared.moved, shared.heads
		got, err := c.Load(ctx, k, q)
		if err != nil {
			t.Fatal(err)
		}
		if follower && (shared.after > after || shared.heads > heads) {
			t.Fatalf("op %d: over a Follower, the cache read a head (%d) or loaded what followed it (%d)", op, shared.heads-heads, shared.after-after)
		}
		if shared.full == full && (shared.after > after || shared.moved > moved) {
			caughtUp++
		}
		if !reflect.DeepEqual(seqs(got.Tail), seqs(want.Tail)) || got.Complete != want.Complete || !reflect.DeepEqual(got.Meta, want.Meta) {
			t.Fatalf("op %d, query %+v:\n got tail %v complete %v meta %+v\nwant tail %v complete %v meta %+v",
				op, q, seqs(got.Tail), got.Complete, got.Meta, seqs(want.Tail), want.Complete, want.Meta)
		}
		for _, m := range got.Tail {
			if !bytes.Equal(m.Raw, shared.msgs[m.Seq-1].Raw) {
				t.Fatalf("op %d: message %d served as %q, stored as %q", op, m.Seq, m.Raw, shared.msgs[m.Seq-1].Raw)
			}
		}
	}
	return caughtUp
}

// randomForget hard-forgets a random active message, as the conversation
// API's forget does (its tool group with it is not this test's concern).
func randomForget(rng *rand.Rand, s *memStore) history.Change {
	var active []history.Message
	for i := range s.msgs {
		if m := s.at(i); m.Active() {
			active = append(active, m)
		}
	}
	ch := history.Change{Version: s.meta.Version, Now: int64(s.meta.Version + 1)}
	if len(active) == 0 {
		return ch
	}
	ch.Forget = history.PlanForget(active, []uint64{active[rng.IntN(len(active))].Seq}, true)
	return ch
}

// A replica that cached a conversation, after the other appended a turn
// and then hard-forgot a message it holds, serves neither the stale tail
// nor the erased text: the forget moved the conversation's Epoch, so it
// reads the window again.
func TestCacheDropsWhatAnotherWriterErased(t *testing.T) {
	ctx := context.Background()
	shared := &sharedStore{soleStore: &soleStore{memStore: &memStore{}}}
	a, b := history.NewCache(shared, 0, 0), history.NewCache(shared, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "c"}
	commit := func(c *history.Cache, ch history.Change) {
		t.Helper()
		ch.Version, ch.Now = shared.meta.Version, int64(shared.meta.Version+1)
		if _, err := c.Commit(ctx, k, ch); err != nil {
			t.Fatal(err)
		}
	}
	commit(a, history.Change{Append: []history.Message{history.User("the secret is 42"), history.Asst("noted")}})
	q := history.Query{MinMessages: 100}
	if _, err := a.Load(ctx, k, q); err != nil {
		t.Fatal(err)
	}
	commit(b, history.Change{Append: []history.Message{history.User("next"), history.Asst("ok")}})
	after, full := shared.after, shared.full
	snap, err := a.Load(ctx, k, q)
	if err != nil {
		t.Fatal(err)
	}
	if shared.after != after+1 || shared.full != full || len(snap.Tail) != 4 {
		t.Fatalf("after the other's append: %d catch-up and %d full loads, %d messages; want 1, 0 and 4",
			shared.after-after, shared.full-full, len(snap.Tail))
	}
	commit(b, history.Change{Forget: history.PlanForget(snap.Tail, []uint64{1}, true)})
	after, full = shared.after, shared.full
	if snap, err = a.Load(ctx, k, q); err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Tail {
		if bytes.Contains(m.Raw, []byte("42")) {
			t.Fatalf("the erased message came back: %s", m.Raw)
		}
	}
	if len(snap.Tail) != 3 || shared.full != full+1 {
		t.Errorf("after the other's forget: %d messages, %d full loads (%d catch-up); want 3 and 1", len(snap.Tail), shared.full-full, shared.after-after)
	}
}
