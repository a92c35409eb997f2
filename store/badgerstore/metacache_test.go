package badgerstore

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// After every kind of write of a conversation's metadata (appends, a
// summary, a supersede, soft and hard forgets, a Delete, the conversation
// made again, a staged commit), the committer's cache holds what Badger
// holds, or nothing: a write path that forgot it leaves a stale entry.
// Durable or relaxed: the committer writes both.
func TestMetaCacheFollowsEveryWrite(t *testing.T) {
	forEachSync(t, testMetaCacheFollowsEveryWrite)
}

func testMetaCacheFollowsEveryWrite(t *testing.T, o Options) {
	k := history.Key{Tenant: "t", Conversation: "a"}
	prefix := convPrefix(k)
	s := openT(t, t.TempDir(), o)
	check := func(step string, wantCached bool) {
		t.Helper()
		var stored history.Meta
		err := s.db.View(func(txn *badger.Txn) (err error) {
			stored, _, err = readMeta(txn, prefix)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		cached, ok := s.metas.get(prefix)
		if !ok && wantCached {
			t.Fatalf("%s: got nothing cached, want the metadata", step)
		}
		if ok && !reflect.DeepEqual(cached, stored) {
			t.Fatalf("%s: got cached %+v, want stored %+v", step, cached, stored)
		}
	}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "one"), textMsg("assistant", "two")}, Now: 1e9})
	check("append", true)
	commitT(t, s, k, history.Change{Version: m.Version, Summary: &history.SummaryChange{Incarnation: m.Incarnation,
		Summary: history.Summary{Text: strings.Repeat("summary ", 100), Through: 2, Turns: 1, At: 7}}})
	check("summary", true)
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "three"), textMsg("assistant", "four")}, Now: 2e9})
	commitT(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 3, Turn: 2}, Append: []history.Message{textMsg("user", "three again")}, Now: 3e9})
	check("supersede", true)
	commitT(t, s, k, history.Change{Forget: history.PlanForget(storedMessages(t, s, k, false), []uint64{1}, false), Now: 4e9})
	check("soft forget", true)
	commitT(t, s, k, history.Change{Forget: history.PlanForget(storedMessages(t, s, k, false), []uint64{2}, true), Now: 5e9})
	check("hard forget", false) // marked for erasure: out of the cache (groupMeta)
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "five")}, Now: 5e9 + 1})
	check("after hard forget", true)
	if err := s.Delete(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	check("delete", false)
	m = commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "anew")}, Now: 6e9})
	check("made again", true)
	if m.Version != 1 || m.Messages != 1 {
		t.Fatalf("made again: got version %d with %d messages, want 1 and 1", m.Version, m.Messages)
	}
	big := make([]history.Message, 40000) // staged: too big for one transaction
	for i := range big {
		big[i] = textMsg("user", "m"+strconv.Itoa(i))
	}
	commitT(t, s, k, history.Change{Append: big, Now: 7e9})
	check("staged", false)
	m = commitT(t, s, k, history.Change{Append: []history.Message{textMsg("assistant", "after")}, Now: 8e9})
	check("after staged", true)
	if m.Messages != 40002 {
		t.Fatalf("after staged: got %d messages, want 40002", m.Messages)
	}
}

// A conversation's second commit takes its metadata from the cache: the
// committer reads it from Badger for the first only.
func TestSecondCommitReadsNoMeta(t *testing.T) {
	forEachSync(t, testSecondCommitReadsNoMeta)
}

func testSecondCommitReadsNoMeta(t *testing.T, o Options) {
	s := openT(t, t.TempDir(), o)
	k := history.Key{Tenant: "t", Conversation: "a"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "one")}, Now: 1e9})
	if got := s.metaReads.Load(); got != 1 {
		t.Fatalf("first commit: got %d reads of metadata, want 1", got)
	}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("assistant", "two")}, Now: 2e9})
	if got := s.metaReads.Load(); got != 1 {
		t.Fatalf("second commit: got %d reads of metadata in all, want 1", got)
	}
}

// The cache keeps to its bound, dropping the least recently used.
func TestMetaCacheEvictsLeastRecentlyUsed(t *testing.T) {
	m := history.Meta{Version: 1}
	one := metaSize("a", &m)
	c := newMetaCache(2 * one)
	c.put("a", m)
	c.put("b", m)
	c.get([]byte("a"))
	c.put("c", m)
	for _, tc := range []struct {
		prefix string
		want   bool
	}{{"a", true}, {"b", false}, {"c", true}} {
		if _, ok := c.get([]byte(tc.prefix)); ok != tc.want {
			t.Errorf("%s: got cached %v, want %v", tc.prefix, ok, tc.want)
		}
	}
	if c.size > c.max {
		t.Errorf("got %d bytes cached, want at most %d", c.size, c.max)
	}
}

// An exchange record's append takes the conversation's incarnation from
// the cache: no Badger read of its metadata or of its pending mark, and
// a record of another incarnation is still left out.
func TestExchangeAppendReadsNoMeta(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "a"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "one")}, Now: 1e9})
	before := s.metaReads.Load()
	recs := []history.ExchangeRecord{{ID: history.NewExchangeID(1), Incarnation: m.Incarnation}, {ID: history.NewExchangeID(2), Incarnation: m.Incarnation + 1}}
	if err := s.AppendExchanges(ctx, k, recs); err != nil {
		t.Fatal(err)
	}
	if got := s.metaReads.Load() - before; got != 0 {
		t.Errorf("got %d reads of metadata, want none", got)
	}
	if got := s.markReads.Load(); got != 0 {
		t.Errorf("got %d reads of the pending mark, want none", got)
	}
	if got := countIn(t, s.side, append(convPrefix(k), 'e')); got != 1 {
		t.Errorf("got %d records stored, want 1 (the other incarnation's left out)", got)
	}
}

// A commit whose metadata the committer's cache holds reads no pending
// mark: the cache holds no marked conversation.
func TestCommitOfACachedConversationReadsNoMark(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	k := history.Key{Tenant: "t", Conversation: "a"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "one")}})
	before := s.commitMarkReads.Load()
	commitT(t, s, k, history.Change{Version: m.Version, Append: []history.Message{textMsg("user", "two")}})
	if got := s.commitMarkReads.Load() - before; got != 0 {
		t.Errorf("got %d reads of the pending mark, want none", got)
	}
}

// A hard forget marks its conversation for erasure, and a commit that
// comes before the erasure is done fails with ErrConflict, as with a
// conversation being deleted: the forget takes the conversation out of
// the committer's cache, so that the commit reads the mark.
func TestCommitDuringAnErasureConflicts(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "a"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "secret"), textMsg("assistant", "noted")}})
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	raced := false
	s.beforeErase = func() {
		s.beforeErase = nil
		raced = true
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Error(err)
			return
		}
		_, err = s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{textMsg("user", "meanwhile")}})
		if !errors.Is(err, history.ErrConflict) {
			t.Errorf("a commit while the erasure is pending: %v, want ErrConflict", err)
		}
	}
	forget := history.Change{Version: m.Version, Forget: history.PlanForget(snap.Tail, []uint64{1}, true)}
	if _, err := s.Commit(ctx, k, forget); err != nil {
		t.Fatal(err)
	}
	if !raced {
		t.Fatal("no commit came between the forget and its erasure")
	}
	snap, err = s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{textMsg("user", "after")}}); err != nil {
		t.Errorf("a commit after the erasure: %v", err)
	}
}

// forEachSync runs test on a durable store and on a relaxed one
// (Options.NoSync), each a subtest.
func forEachSync(t *testing.T, test func(*testing.T, Options)) {
	t.Run("durable", func(t *testing.T) { test(t, Options{}) })
	t.Run("relaxed", func(t *testing.T) { test(t, Options{NoSync: true}) })
}
