package pgstore_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// twoReplicaCaches opens two stores on one new database, each behind its
// own window cache, as two replicas run.
func twoReplicaCaches(t *testing.T) (a, b *history.Cache) {
	t.Helper()
	url := pgtest.DB(t)
	return history.NewCache(open(t, url, pgstore.Options{}), 0, 0), history.NewCache(open(t, url, pgstore.Options{}), 0, 0)
}

// TestReplicaCachesStayCoherent: two replicas, each with its own window
// cache over one database. What one writes (a turn, a summary, a delete)
// the other's next load sees, though its cache held the conversation.
func TestReplicaCachesStayCoherent(t *testing.T) {
	ctx := testCtx(t)
	a, b := twoReplicaCaches(t)
	k := history.Key{Tenant: "t", Conversation: "c"}
	q := history.Query{MinMessages: 100}
	load := func(c *history.Cache) history.Snapshot {
		t.Helper()
		snap, err := c.Load(ctx, k, q)
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	commit(t, a, k, history.Change{Append: turns(0, 1)}) // a caches it
	for i := 1; i <= 3; i++ {
		w, r := b, a
		if i%2 == 0 {
			w, r = a, b
		}
		load(w)
		commit(t, w, k, history.Change{Append: turns(i, 1)})
		if snap := load(r); len(snap.Tail) != 2*(i+1) || snap.Meta.Version != uint64(i+1) {
			t.Fatalf("after write %d: the other replica loads %d messages at version %d, want %d at %d", i, len(snap.Tail), snap.Meta.Version, 2*(i+1), i+1)
		}
	}
	if a.Len() != 1 || b.Len() != 1 {
		t.Fatalf("caches hold %d and %d conversations, want 1 each", a.Len(), b.Len())
	}
	// A summary does not bump Version; a's cached copy must still go.
	if _, err := b.Commit(ctx, k, history.Change{Now: 9e9, Summary: &history.SummaryChange{Incarnation: load(b).Meta.Incarnation,
		Summary: history.Summary{Text: "s", Through: 2}}}); err != nil {
		t.Fatal(err)
	}
	if snap := load(a); snap.Meta.Summary == nil {
		t.Fatal("a summary landed by one replica is not seen by the other")
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if snap := load(a); snap.Meta.Version != 0 || len(snap.Tail) != 0 {
		t.Fatalf("after a delete by the other replica: version %d, %d messages; want none", snap.Meta.Version, len(snap.Tail))
	}
}

// BenchmarkLoad measures a load of a 50-turn conversation's tail (a 16k
// budget reads it all): straight from PostgreSQL, and through the window
// cache, whose hit costs a head read instead.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.DB(b), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 50 {
		commit(b, s, k, history.Change{Append: []history.Message{user("question "+strconv.Itoa(i)+" about the weather in some city", 40), asst("a longer answer about the weather, "+strconv.Itoa(i), 120)}})
	}
	q := history.Query{MinMessages: 1, Tokens: 16000, FromCut: true}
	for _, bc := range []struct {
		name  string
		store history.Store
	}{{"direct", s}, {"cache-hit-head-check", history.NewCache(s, 0, 0)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snap, err := bc.store.Load(ctx, k, q)
				if err != nil || len(snap.Tail) != 100 {
					b.Fatalf("got %d messages, %v", len(snap.Tail), err)
				}
			}
		})
	}
	b.Run("head", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Head(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCommit measures a chat turn's commit (two messages).
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.DB(b), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "c"}
	var version uint64
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m, err := s.Commit(ctx, k, history.Change{Version: version, Now: int64(i+1) * 1e9,
			Append: []history.Message{user("question "+strconv.Itoa(i), 40), asst("an answer", 120)}})
		if err != nil {
			b.Fatal(err)
		}
		version = m.Version
		i++
	}
}

// TestCacheLeasesThroughToTheStore: the window cache is a Leaser whose
// leases are the shared store's, so what holds a lease through the cache
// (the summary jobs) excludes other replicas.
func TestCacheLeasesThroughToTheStore(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	a := history.NewCache(open(t, url, pgstore.Options{}), 0, 0)
	b := open(t, url, pgstore.Options{})
	release := mustTryAcquire(t, ctx, a, "summary/t/c", "the cache")
	cannotTake(t, ctx, b, "summary/t/c", "another replica, while the cache holds it,")
	release()
	mustTryAcquire(t, ctx, b, "summary/t/c", "the other replica, after release,")()
}

// A conversation deleted and written again by one replica, to the same
// version and summary count, is another conversation: the other replica's
// cached copy (the deleted text) must not be served for it.
func TestReplicaCacheDropsADeletedAndRemadeConversation(t *testing.T) {
	ctx := testCtx(t)
	a, b := twoReplicaCaches(t)
	k := history.Key{Tenant: "t", Conversation: "c"}
	q := history.Query{MinMessages: 100}
	commit(t, a, k, history.Change{Append: turns(0, 1)}) // a caches it
	if snap, err := a.Load(ctx, k, q); err != nil || len(snap.Tail) != 2 {
		t.Fatalf("a loads %d messages (%v), want 2", len(snap.Tail), err)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	commit(t, b, k, history.Change{Append: turns(7, 1)}) // version 1 again
	snap, err := a.Load(ctx, k, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Tail) != 2 || !strings.Contains(string(snap.Tail[0].Raw), "question 7") {
		t.Errorf("a serves %q, want the new conversation's question 7", snap.Tail[0].Raw)
	}
}

// Follow reads a conversation's head and, if it is not the one given,
// what was added after a message, in one round trip: nothing more when
// the head is the one given; the metadata and the messages after when
// another replica appended (at most FirstBatch of them, which a cache
// sees as too few); zero for a conversation deleted.
func TestFollow(t *testing.T) {
	ctx := testCtx(t)
	rt := &roundTrips{}
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rt, FirstBatch: 4})
	other := open(t, url, pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "f"}
	m := commit(t, s, k, history.Change{Append: turns(0, 1)})
	follow := func(what string, h history.Head, after uint64) (history.Head, *history.Snapshot) {
		t.Helper()
		rt.take()
		head, snap, err := s.Follow(ctx, k, h, after, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := rt.take(); n != 1 {
			t.Errorf("%s: %d round trips, want 1", what, n)
		}
		return head, snap
	}
	if head, snap := follow("unmoved", history.HeadOf(&m), m.NextSeq-1); !head.Same(history.HeadOf(&m)) || snap != nil {
		t.Fatalf("unmoved: head %+v, snapshot %v; want %+v and none", head, snap, history.HeadOf(&m))
	}
	m2 := commit(t, other, k, history.Change{Version: m.Version, Append: turns(1, 1)})
	head, snap := follow("a turn appended", history.HeadOf(&m), m.NextSeq-1)
	if !head.Same(history.HeadOf(&m2)) || snap == nil || snap.Meta.Version != m2.Version {
		t.Fatalf("a turn appended: head %+v, snapshot %+v; want %+v and the metadata", head, snap, history.HeadOf(&m2))
	}
	if got := seqsOf(snap.Tail); !slices.Equal(got, []uint64{3, 4}) {
		t.Errorf("a turn appended: messages %v, want [3 4]", got)
	}
	m3 := commit(t, other, k, history.Change{Version: m2.Version, Append: turns(2, 3)})
	if _, snap := follow("more than the first batch", history.HeadOf(&m2), m2.NextSeq-1); snap == nil || len(snap.Tail) >= int(m3.NextSeq-m2.NextSeq) {
		t.Errorf("six messages appended, a first batch of 4: got %v, want fewer than 6", snap)
	}
	if err := other.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if head, snap := follow("deleted", history.HeadOf(&m3), m3.NextSeq-1); head != (history.Head{}) || snap == nil || snap.Meta.Version != 0 {
		t.Errorf("deleted: head %+v, snapshot %+v; want the zero head and metadata", head, snap)
	}
}

func seqsOf(msgs []history.Message) []uint64 {
	var out []uint64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}
