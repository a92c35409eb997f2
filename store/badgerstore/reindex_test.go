package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// A database written before the indexes existed (metadata and records
// only, as v0.1 wrote them) is indexed at Open: its conversations are
// listed and searched like new ones, and commits keep the index right.
func TestOpenIndexesAnOlderDatabase(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{})
	// v0.1's commit: Apply, then records and metadata, no index; and no
	// index version.
	old := func(k history.Key, c history.Change) {
		err := s.db.Update(func(txn *badger.Txn) error {
			prefix := convPrefix(k)
			m, _, err := readMeta(txn, prefix)
			if err != nil {
				return err
			}
			c.Version = m.Version
			next, writes := history.Apply(m, c, nil)
			for i := range writes {
				if err := txn.Set(msgKey(prefix, writes[i].Seq), history.AppendMessage(nil, &writes[i])); err != nil {
					return err
				}
			}
			mv, err := history.MarshalMeta(&next)
			if err != nil {
				return err
			}
			return txn.Set(metaKey(prefix), mv)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(i)}
		var msgs []history.Message
		for j := range 300 { // more than a batch
			msgs = append(msgs, textMsg("user", "old message "+strconv.Itoa(j)+" of c"+strconv.Itoa(i)))
		}
		old(k, history.Change{Append: msgs, Now: int64(i+1) * 1e9})
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(indexKey) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, Options{})
	ctx := context.Background()
	page, _, err := s.List(ctx, "t", history.ListQuery{Limit: 10})
	if err != nil || len(page) != 3 || page[0].Conversation != "c2" {
		t.Fatalf("got %v, %v; want c2, c1, c0", page, err)
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "299", Limit: 10})
	if err != nil || len(hits) != 3 {
		t.Fatalf("search: got %d hits, %v; want one per conversation", len(hits), err)
	}
	hits, err = s.Search(ctx, "t", history.SearchQuery{Text: "message", Conversation: "c1", Limit: 1000})
	if err != nil || len(hits) != 300 || hits[0].Message.CreatedAt.Compare(time.Unix(2, 0)) != 0 {
		t.Fatalf("search in c1: got %d hits, %v; want 300", len(hits), err)
	}
	// The totals came along: a conversation's search scores as if indexed
	// by commits (same statistics as a fresh copy).
	fresh := openT(t, t.TempDir(), Options{})
	var msgs []history.Message
	for j := range 300 {
		msgs = append(msgs, textMsg("user", "old message "+strconv.Itoa(j)+" of c1"))
	}
	commitT(t, fresh, history.Key{Tenant: "t", Conversation: "c1"}, history.Change{Append: msgs, Now: 2e9})
	want, err := fresh.Search(ctx, "t", history.SearchQuery{Text: "message 7", Conversation: "c1", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Search(ctx, "t", history.SearchQuery{Text: "message 7", Conversation: "c1", Limit: 5})
	if err != nil || len(got) != len(want) || got[0].Score != want[0].Score || !bytes.Equal(got[0].Message.Raw, want[0].Message.Raw) {
		t.Errorf("got %v, want %v", got, want)
	}
	m := commitT(t, s, history.Key{Tenant: "t", Conversation: "c0"}, history.Change{Append: []history.Message{textMsg("user", "newest")}, Now: 9e9})
	if page, _, err := s.List(ctx, "t", history.ListQuery{Limit: 10}); err != nil || page[0].Conversation != "c0" || page[0].Meta.Version != m.Version || len(page) != 3 {
		t.Errorf("after a commit: got %v, %v; want c0 first, 3 entries", page, err)
	}
}

// A database indexed with one key per posting (index version 1) loses
// those keys at Open and is indexed again in segments; a summary written
// inside the metadata moves to its own key.
func TestOpenReindexesVersion1Postings(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "version one posting")}})
	// Version 1's state: a posting key per term, totals saying all is
	// indexed, a clean listing entry.
	oldKey := []byte("i\x00t\x00posting\x00c\x00\x00\x00\x00\x00\x00\x00\x00\x01")
	err := s.db.Update(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, convPrefix(k))
		if err != nil {
			return err
		}
		m.Summary = &history.Summary{Text: "inline summary", Through: 1, At: 1}
		inline, err := history.MarshalMeta(&m) // as version 1 wrote it
		if err != nil {
			return err
		}
		for _, set := range [][2][]byte{
			{metaKey(convPrefix(k)), inline},
			{oldKey, {1, 3, 0}},
			{totalsKey(k), totals{docs: 1, terms: 3, indexed: m.NextSeq}.append(nil)},
			{listKey(k, m.UpdatedAt), listClean},
			{indexKey, {1}},
		} {
			if err := txn.Set(set[0], set[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	err = s.db.View(func(txn *badger.Txn) error {
		if _, err := txn.Get(oldKey); err != badger.ErrKeyNotFound {
			t.Errorf("the version 1 posting: got %v, want it gone", err)
		}
		seqs, err := postingSeqs(s.side, k, "posting")
		if err != nil || len(seqs) != 1 || seqs[0] != 1 {
			t.Errorf("postings of posting: got %v, %v; want [1] in a segment", seqs, err)
		}
		tot, err := readTotals(txn, k)
		if err == nil && tot.docs != 1 {
			t.Errorf("got totals %+v, want 1 doc (counted once)", tot)
		}
		head, _, err := readMetaHead(txn, convPrefix(k))
		if err != nil {
			return err
		}
		item, err := txn.Get(summaryKey(convPrefix(k)))
		if err != nil {
			return err
		}
		text, err := item.ValueCopy(nil)
		if head.Summary == nil || head.Summary.Text != "" || string(text) != "inline summary" {
			t.Errorf("the summary: got %+v in the metadata and %q apart, want its text moved apart", head.Summary, text)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A database whose segments spell out each group's conversation id and
// creation time (index version 3) is indexed again at Open, in segments
// that name conversations by their place in a table: its searches find
// what they found before.
func TestOpenReindexesVersion3Segments(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	for c := range 3 {
		k := history.Key{Tenant: "t", Conversation: "conv-" + strconv.Itoa(c)}
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus tusks "+strconv.Itoa(c)), textMsg("assistant", "walrus ivory")}})
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	q := history.SearchQuery{Text: "walrus ivory", Limit: 10}
	before, err := s.Search(context.Background(), "t", q)
	if err != nil || len(before) != 6 {
		t.Fatalf("search: %d hits, %v; want 6", len(before), err)
	}
	// Version 3's state: each term's groups with the id and full
	// creation time, no tables, the span keys' first and last seq only.
	err = s.side.Update(func(txn *badger.Txn) error {
		var keys, vals [][]byte
		it := txn.NewIterator(badger.IteratorOptions{})
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				it.Close()
				return err
			}
			keys, vals = append(keys, it.Item().KeyCopy(nil)), append(vals, v)
		}
		it.Close()
		slices.SortStableFunc(keys, func(a, b []byte) int { return int(b[0]) - int(a[0]) }) // i before g and f: the tables decode the terms
		vals = vals[:0]
		for _, key := range keys {
			item, err := txn.Get(key)
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			vals = append(vals, v)
		}
		for i, key := range keys {
			switch key[0] {
			case 'g':
				if err := txn.Delete(key); err != nil {
					return err
				}
			case 'f':
				sg, ok := decodeSpan(0, vals[i])
				if !ok {
					return errBadSegment
				}
				if err := txn.Set(key, binary.AppendUvarint(binary.AppendUvarint(nil, sg.first), sg.last)); err != nil {
					return err
				}
			case 'i':
				var old []byte
				err := eachNamedGroup(txn, "t", key, vals[i], func(id string, base segBase, g segGroup) {
					old = binary.AppendUvarint(old, uint64(len(id)))
					old = append(old, id...)
					old = binary.AppendUvarint(old, uint64(g.n))
					var seq uint64
					var created int64
					g.each(base, func(p posting, sq uint64) {
						old = binary.AppendUvarint(old, sq-seq)
						old = binary.AppendUvarint(old, uint64(p.tf))
						old = binary.AppendUvarint(old, uint64(p.dl))
						old = binary.AppendVarint(old, p.created-created)
						seq, created = sq, p.created
					})
				})
				if err != nil {
					return err
				}
				if err := txn.Set(key, old); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil {
		err = s.db.Update(func(txn *badger.Txn) error { return txn.Set(indexKey, []byte{3}) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	after, err := s.Search(context.Background(), "t", q)
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Errorf("after Open: %v, %v; want %v", after, err, before)
	}
	if n := countIn(t, s.side, []byte{'g', 0}); n == 0 {
		t.Error("no segment table after Open")
	}
}
