package badgerstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// Commits write no postings; Fold writes them, moves each conversation's
// watermark to its end and marks its listing entry clean, and searches
// give the same hits with the same scores before and after.
func TestFoldIndexesWhatCommitsLeft(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	words := []string{"alpha", "beta", "gamma", "delta"}
	for c := range 3 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		for i := range 5 {
			commitT(t, s, k, history.Change{Append: []history.Message{
				textMsg("user", words[(c+i)%4]+" question "+strconv.Itoa(i)),
				textMsg("assistant", words[i%4]+" "+words[c%4]+" answer")}, Now: int64(c*10+i+1) * 1e9})
		}
	}
	postings := func() int { return countIn(t, s.side, []byte{'i', 0}) }
	queries := []history.SearchQuery{{Text: "alpha answer", Limit: 50}, {Text: "gamma", Conversation: "c1", Limit: 50}, {Text: "question 3", Limit: 50}}
	var before [][]history.Hit
	for _, q := range queries {
		hits, err := s.Search(ctx, "t", q)
		if err != nil || len(hits) == 0 {
			t.Fatalf("%+v: got %d hits, %v", q, len(hits), err)
		}
		before = append(before, hits)
	}
	if n := postings(); n != 0 {
		t.Fatalf("before the fold: got %d postings, want none", n)
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if n := postings(); n == 0 {
		t.Fatal("after the fold: got no postings")
	}
	err := s.db.View(func(txn *badger.Txn) error {
		for c := range 3 {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
			m, _, err := readMeta(txn, convPrefix(k))
			if err != nil {
				return err
			}
			tot, err := readTotals(txn, k)
			if err != nil {
				return err
			}
			item, err := txn.Get(listKey(k, m.UpdatedAt))
			if err != nil {
				return err
			}
			v, _ := item.ValueCopy(nil)
			if tot.indexed != m.NextSeq || tot.docs != 10 || dirty(v) {
				t.Errorf("%s: got totals %+v, listing %v; want indexed %d, 10 docs, clean", k, tot, v, m.NextSeq)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		hits, err := s.Search(ctx, "t", q)
		if err != nil || len(hits) != len(before[i]) {
			t.Fatalf("%+v after the fold: got %d hits, %v; want %d", q, len(hits), err, len(before[i]))
		}
		for j, h := range hits {
			b := before[i][j]
			if h.Conversation != b.Conversation || h.Message.Seq != b.Message.Seq || math.Abs(h.Score-b.Score) > 1e-12 {
				t.Errorf("%+v hit %d: got %s/%d %v, want %s/%d %v", q, j, h.Conversation, h.Message.Seq, h.Score, b.Conversation, b.Message.Seq, b.Score)
			}
		}
	}
	// A new commit makes the conversation dirty again; search finds it.
	commitT(t, s, history.Key{Tenant: "t", Conversation: "c0"}, history.Change{Append: []history.Message{textMsg("user", "epsilon")}, Now: 99e9})
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "epsilon", Limit: 5}); err != nil || len(hits) != 1 {
		t.Errorf("after a new commit: got %d hits, %v; want 1", len(hits), err)
	}
}

// What a run left unindexed is indexed by the next Open, before it
// returns.
func TestOpenFoldsWhatTheLastRunLeft(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "left behind")}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	err := s.db.View(func(txn *badger.Txn) error {
		tot, err := readTotals(txn, k)
		if err != nil {
			return err
		}
		if seqs, err := postingSeqs(s.side, k, "behind"); err != nil || !slices.Equal(seqs, []uint64{1}) {
			t.Errorf("postings of behind: got %v, %v; want [1]", seqs, err)
		}
		if tot.indexed != m.NextSeq || tot.docs != 1 {
			t.Errorf("got totals %+v, want everything indexed", tot)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Close indexes what the run left, so the next Open has nothing to fold
// however much was written (the load script seeds tens of thousands of
// messages, then starts a server on them).
func TestCloseFoldsWhatTheRunLeft(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "written before close")}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Badger itself, not Open: Open would fold whatever Close left.
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	side, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, sideDir)).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close()
	err = db.View(func(txn *badger.Txn) error {
		tot, err := readTotals(txn, k)
		if err != nil {
			return err
		}
		if tot.indexed != m.NextSeq {
			t.Errorf("after Close the watermark is %d, want %d (everything indexed)", tot.indexed, m.NextSeq)
		}
		if seqs, err := postingSeqs(side, k, "close"); err != nil || !slices.Equal(seqs, []uint64{1}) {
			t.Errorf("postings of close: got %v, %v; want [1]", seqs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// postingSeqs returns the seqs of k's messages with postings for term in
// side (a store's side database).
func postingSeqs(side *badger.DB, k history.Key, term string) (seqs []uint64, err error) {
	err = side.View(func(txn *badger.Txn) error {
		seqs, err = postingSeqsIn(txn, k, term)
		return err
	})
	return seqs, err
}

// eachNamedGroup calls fn for each group of v, the value of the term key
// key of tenant, with its conversation's id and base from the segment's
// table.
func eachNamedGroup(txn *badger.Txn, tenant string, key, v []byte, fn func(id string, base segBase, g segGroup)) error {
	table, err := readSegTable(txn, nil, tenant, binary.BigEndian.Uint64(key[len(key)-8:]))
	if err != nil {
		return err
	}
	return eachGroup(v, func(g segGroup) error {
		if g.conv >= len(table) {
			return fmt.Errorf("group of conversation %d in a table of %d", g.conv, len(table))
		}
		fn(string(table[g.conv].conv), table[g.conv].base, g)
		return nil
	})
}

func postingSeqsIn(txn *badger.Txn, k history.Key, term string) ([]uint64, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = segTermPrefix(k.Tenant, term)
	it := txn.NewIterator(opts)
	defer it.Close()
	var seqs []uint64
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		err = eachNamedGroup(txn, k.Tenant, it.Item().Key(), v, func(id string, base segBase, g segGroup) {
			if id == k.Conversation {
				g.each(base, func(_ posting, seq uint64) { seqs = append(seqs, seq) })
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return seqs, nil
}

// A commit may land on a conversation while a fold indexes it, durable or
// relaxed: the fold never holds the committer. Its write conflicts, and
// the round is made again, rather than left to the next wake.
func TestFoldRetriesAfterACommitRaced(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(map[bool]string{false: "durable", true: "relaxed"}[noSync], func(t *testing.T) {
			testFoldRetriesAfterACommitRaced(t, noSync)
		})
	}
}

// The fold commits in the committer, where no commit can come between its
// checks and its write: the commit races it between its read and its
// commit instead.
func testFoldRetriesAfterACommitRaced(t *testing.T, noSync bool) {
	s := openT(t, t.TempDir(), Options{NoSync: noSync, IndexBacklog: 1 << 30})
	// A fold that held the committer while it read would hold this commit
	// until the deadline: the test would fail, not hang.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for c := range 4 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "raced words"), textMsg("assistant", "answer")}})
	}
	raced := false
	s.betweenFoldPhases = func() {
		if raced {
			return
		}
		raced = true
		k := history.Key{Tenant: "t", Conversation: "c0"}
		snap, err := s.Load(ctx, k, history.Query{})
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Append: []history.Message{textMsg("user", "meanwhile")}}); err != nil {
			t.Error(err)
		}
	}
	if err := s.Fold(); err != nil {
		t.Fatalf("fold: %v, want it made again after the conflict", err)
	}
	if !raced {
		t.Fatal("no commit raced the fold")
	}
	err := s.db.View(func(txn *badger.Txn) error {
		for c := range 4 {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
			seqs, err := postingSeqs(s.side, k, "raced")
			if err != nil {
				return err
			}
			if !slices.Equal(seqs, []uint64{1}) {
				t.Errorf("%s: postings of raced: got %v, want [1]", k.Conversation, seqs)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The raced commit's record is left to the next fold, once.
	for range 2 {
		if err := s.Fold(); err != nil {
			t.Fatal(err)
		}
	}
	seqs, err := postingSeqs(s.side, history.Key{Tenant: "t", Conversation: "c0"}, "meanwhile")
	if err != nil || !slices.Equal(seqs, []uint64{3}) {
		t.Errorf("c0: postings of meanwhile: got %v, %v; want [3]", seqs, err)
	}
}

// A fold reads in a snapshot and writes later: records it read may be
// erased in between (here by a hard forget of records not indexed yet,
// which leaves the totals as they were). Its write must notice and read
// again, not index records that are gone.
func TestFoldIndexesNoRecordErasedMeanwhile(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	for c := range 3 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "erased words"), textMsg("assistant", "answer")}})
	}
	k0 := history.Key{Tenant: "t", Conversation: "c0"}
	erased := false
	s.betweenFoldPhases = func() {
		if erased {
			return
		}
		erased = true
		snap, err := s.Load(ctx, k0, history.Query{})
		if err != nil {
			t.Error(err)
			return
		}
		c := history.Change{Version: snap.Meta.Version, Forget: history.PlanForget(snap.Tail, []uint64{1}, true)}
		if _, err := s.Commit(ctx, k0, c); err != nil {
			t.Error(err)
		}
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if !erased {
		t.Fatal("nothing was erased between the fold's read and its write")
	}
	err := s.db.View(func(txn *badger.Txn) error {
		for c := range 3 {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
			seqs, err := postingSeqs(s.side, k, "erased")
			if err != nil {
				return err
			}
			want := []uint64{1}
			if k == k0 {
				want = nil
			}
			if !slices.Equal(seqs, want) {
				t.Errorf("%s: postings of erased: got %v, want %v", k.Conversation, seqs, want)
			}
		}
		tot, err := readTotals(txn, k0)
		if err != nil {
			return err
		}
		if tot.docs != 1 {
			t.Errorf("c0: got %d indexed records, want 1 (the answer)", tot.docs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "erased", Conversation: "c0", Limit: 5}); err != nil || len(hits) != 0 {
		t.Errorf("search of c0 after the fold: got %d hits, %v; want none", len(hits), err)
	}
}

// A fold round gives its segment builders back emptied and the next round
// takes them, room and all: the second segment holds only what the second
// round read, none of the first's terms or conversations.
func TestFoldRoundsReuseTheirBuilders(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	first := history.Key{Tenant: "t", Conversation: "c0"}
	second := history.Key{Tenant: "t", Conversation: "c1"}
	commitT(t, s, first, history.Change{Append: []history.Message{textMsg("user", "alpha question")}, Now: 1e9})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if len(s.foldBuilders) != 1 {
		t.Fatalf("after the first fold: got %d builders kept, want 1", len(s.foldBuilders))
	}
	kept := s.foldBuilders[0]
	room := cap(kept.postings)
	if room == 0 || len(kept.postings) != 0 || len(kept.terms) != 0 || len(kept.convs) != 0 || kept.docs != 0 {
		t.Fatalf("kept builder: got %d postings (room %d), %d terms, %d convs, %d docs; want empty with room",
			len(kept.postings), room, len(kept.terms), len(kept.convs), kept.docs)
	}
	commitT(t, s, second, history.Change{Append: []history.Message{textMsg("user", "beta question")}, Now: 2e9})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if len(s.foldBuilders) != 1 || s.foldBuilders[0] != kept || cap(kept.postings) < room {
		t.Errorf("after the second fold: got builders %p (room %d), want the first round's %p back (room >= %d)",
			s.foldBuilders, cap(kept.postings), kept, room)
	}
	for _, tt := range []struct {
		k    history.Key
		term string
		want []uint64
	}{
		{first, "alpha", []uint64{1}},
		{first, "beta", nil},
		{second, "beta", []uint64{1}},
		{second, "alpha", nil},
		{first, "question", []uint64{1}},
		{second, "question", []uint64{1}},
	} {
		got, err := postingSeqs(s.side, tt.k, tt.term)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %q: got postings at %v, want %v", tt.k.Conversation, tt.term, got, tt.want)
		}
	}
	if n := countIn(t, s.side, segTermPrefix("t", "alpha")); n != 1 {
		t.Errorf("got %d segments with alpha, want 1 (the second round's must not carry the first's terms)", n)
	}
}

// totalsT is k's conversation's totals as stored.
func totalsT(t *testing.T, s *Store, k history.Key) totals {
	t.Helper()
	var tot totals
	err := s.db.View(func(txn *badger.Txn) (err error) {
		tot, err = readTotals(txn, k)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tot
}

// A fold takes the totals the previous one wrote from memory: it reads no
// conversation's totals or pending key, and indexes their new records
// as one that read them would.
func TestFoldTakesTheTotalsItWrote(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	var keys []history.Key
	for c := range 3 {
		keys = append(keys, history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)})
	}
	for _, k := range keys {
		turnT(t, s, k, "early")
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if n := s.foldHeadReads.Load(); n != 3 {
		t.Fatalf("the first fold read %d conversations' totals, want 3", n)
	}
	for _, k := range keys {
		turnT(t, s, k, "late")
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if n := s.foldHeadReads.Load(); n != 3 {
		t.Errorf("the second fold read %d conversations' totals, want none more than the first's 3", n)
	}
	// Its commit, in the committer, read nothing either: the metadata is
	// the committer's cache's, the totals what the committer wrote.
	if n := s.foldCommitReads.Load(); n != 3 {
		t.Errorf("the folds' commits read %d times, want only the first's 3 (totals)", n)
	}
	for _, k := range keys {
		if !indexedT(t, s, k) {
			t.Errorf("%s: not indexed to its end after the second fold", k.Conversation)
		}
		if tot := totalsT(t, s, k); tot.docs != 4 || tot.indexed != 5 {
			t.Errorf("%s: totals %+v after the second fold, want 4 documents indexed up to 5", k.Conversation, tot)
		}
	}
	hits, err := s.Search(context.Background(), "t", history.SearchQuery{Text: "late", Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 6 {
		t.Errorf("searching for the second fold's word: %d hits, want 6", len(hits))
	}
}

// Totals changed behind the memory of them (a hard forget uncounts what
// it erases) fail the fold's first try as stale; the round is tried
// again reading them, and the fold indexes as one without the memory.
func TestFoldReadsTheTotalsAnErasureChanged(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	turnT(t, s, k, "early")
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	var active []history.Message
	if err := s.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, m); return true }); err != nil {
		t.Fatal(err)
	}
	commitT(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{1, 2}, true)})
	if tot := totalsT(t, s, k); tot.docs != 0 {
		t.Fatalf("totals %+v after erasing the indexed turn, want no documents", tot)
	}
	turnT(t, s, k, "late")
	before := s.foldHeadReads.Load()
	if err := s.Fold(); err != nil {
		t.Fatalf("fold after an erasure changed the totals: %v", err)
	}
	if n := s.foldHeadReads.Load() - before; n != 1 {
		t.Errorf("the fold read the totals %d times, want once (its try again)", n)
	}
	if tot := totalsT(t, s, k); tot.docs != 2 || tot.indexed != 5 {
		t.Errorf("totals %+v after the fold, want 2 documents indexed up to 5", tot)
	}
	if !indexedT(t, s, k) {
		t.Error("not indexed to its end after the fold")
	}
}
