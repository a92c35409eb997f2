package badgerstore

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// A fold writes one key per term for every conversation it indexes, and
// a hard forget or a delete takes out of those shared keys exactly the
// postings of what it erases.
func TestSegmentsSharedByConversations(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	a := history.Key{Tenant: "t", Conversation: "a"}
	b := history.Key{Tenant: "t", Conversation: "b"}
	for _, k := range []history.Key{a, b} {
		commitT(t, s, k, history.Change{Append: []history.Message{
			textMsg("user", "shared alpha question"), textMsg("assistant", "shared answer")}})
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	view := func(fn func(txn *badger.Txn) error) {
		t.Helper()
		if err := s.side.View(fn); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func(k history.Key, term string) (out []uint64) {
		t.Helper()
		view(func(txn *badger.Txn) (err error) { out, err = postingSeqsIn(txn, k, term); return err })
		return out
	}
	view(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = segTermPrefix("t", "shared")
		it := txn.NewIterator(opts)
		defer it.Close()
		n := 0
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		if n != 1 {
			t.Errorf("got %d keys for the term shared, want 1 (one segment for both conversations)", n)
		}
		return nil
	})
	if got := seqs(a, "shared"); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("a's postings of shared: got %v, want [1 2]", got)
	}

	// Erasing a's question leaves its answer's postings and all of b's.
	commitT(t, s, a, history.Change{Forget: history.PlanForget(storedMessages(t, s, a, false), []uint64{1}, true)})
	if got := seqs(a, "shared"); !slices.Equal(got, []uint64{2}) {
		t.Errorf("after the hard forget, a's postings of shared: got %v, want [2]", got)
	}
	if got := seqs(a, "alpha"); len(got) != 0 {
		t.Errorf("after the hard forget, a's postings of alpha: got %v, want none", got)
	}
	if got := seqs(b, "alpha"); !slices.Equal(got, []uint64{1}) {
		t.Errorf("after a's hard forget, b's postings of alpha: got %v, want [1]", got)
	}

	// Deleting a leaves nothing of it in the shared keys.
	if err := s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, s, a); len(got) != 0 {
		t.Errorf("after the delete: got a's keys %q", got)
	}
	if got := seqs(b, "shared"); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("after a's delete, b's postings of shared: got %v, want [1 2]", got)
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "shared", Limit: 10})
	if err != nil || len(hits) != 2 || hits[0].Conversation != "b" || hits[1].Conversation != "b" {
		t.Errorf("search after a's delete: got %+v, %v; want b's two messages", hits, err)
	}
}

// A summary's text lives under a key of its own: commits that do not
// change it leave that key alone and keep the metadata small, loads
// return it whole, and a delete takes it.
func TestSummaryTextApartFromTheMetadata(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "q"), textMsg("assistant", "a")}})
	text := strings.Repeat("a long summary ", 200)
	m = commitT(t, s, k, history.Change{Version: m.Version, Summary: &history.SummaryChange{Incarnation: m.Incarnation, Summary: history.Summary{Text: text, Through: 2, Turns: 1, At: 7}}})
	version := func(key []byte) (v uint64) {
		t.Helper()
		err := s.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(key)
			if err == nil {
				v = item.Version()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	prefix := convPrefix(k)
	before := version(summaryKey(prefix))
	m = commitT(t, s, k, history.Change{Version: m.Version, Append: []history.Message{textMsg("user", "next")}})
	if got := version(summaryKey(prefix)); got != before {
		t.Errorf("a commit that kept the summary rewrote its text (version %d -> %d)", before, got)
	}
	if m.Summary == nil || m.Summary.Text != text {
		t.Errorf("the commit's metadata: got summary %+v, want the text whole", m.Summary)
	}
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(prefix))
		if err != nil {
			return err
		}
		if item.ValueSize() > 1024 {
			t.Errorf("the metadata record holds %d bytes, want the text left out", item.ValueSize())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Summary == nil || snap.Meta.Summary.Text != text {
		t.Errorf("load: got summary %+v, %v; want the text whole", snap.Meta.Summary, err)
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if got := keysOf(t, s, k); len(got) != 0 {
		t.Errorf("after the delete: got keys %q", got)
	}
}
