package badgerstore

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// A fold of the records the committer handed over writes exactly the
// segments and totals that a fold reading them back from Badger writes,
// and reads nothing from Badger (the normal path); with nothing handed
// over (a restart's backlog), it reads.
func TestFoldFromMemoryMatchesRead(t *testing.T) {
	build := func(handOver bool) *Store {
		s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
		if !handOver {
			s.fresh = nil
		}
		words := []string{"alpha", "beta", "gamma", "delta"}
		for c := range 3 {
			k := history.Key{Tenant: "t" + strconv.Itoa(c%2), Conversation: "c" + strconv.Itoa(c)}
			for i := range 4 {
				commitT(t, s, k, history.Change{Incarnation: uint64(c + 1), Now: int64(c*10+i+1) * 1e9, Append: []history.Message{
					textMsg("user", words[(c+i)%4]+" question "+strconv.Itoa(i)),
					textMsg("assistant", words[i%4]+" "+words[c%4]+" answer")}})
			}
		}
		k := history.Key{Tenant: "t1", Conversation: "c1"}
		commitT(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 7, Turn: 4}, Now: 50e9,
			Append: []history.Message{textMsg("user", "gamma question again")}})
		commitT(t, s, k, history.Change{Forget: history.PlanForget(storedMessages(t, s, k, false), []uint64{2}, false), Now: 51e9})
		if err := s.Fold(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	mem, read := build(true), build(false)
	if n := mem.foldReads.Load(); n != 0 {
		t.Errorf("handed over: the fold read %d conversations from Badger, want none", n)
	}
	if n := read.foldReads.Load(); n == 0 {
		t.Errorf("nothing handed over: the fold read no conversation from Badger")
	}
	for _, tc := range []struct {
		name   string
		db     func(*Store) *badger.DB
		prefix []byte
	}{
		{"postings", func(s *Store) *badger.DB { return s.side }, []byte{'i', 0}},
		{"spans", func(s *Store) *badger.DB { return s.side }, []byte{'f', 0}},
		{"totals", func(s *Store) *badger.DB { return s.db }, []byte{'w', 0}},
		{"listing", func(s *Store) *badger.DB { return s.db }, []byte{'l', 0}},
	} {
		got, want := dumpKeys(t, tc.db(mem), tc.prefix), dumpKeys(t, tc.db(read), tc.prefix)
		if len(want) == 0 {
			t.Errorf("%s: read from Badger: got none", tc.name)
		}
		if !bytes.Equal(bytes.Join(got, nil), bytes.Join(want, nil)) {
			t.Errorf("%s: from memory got\n%q\nread from Badger got\n%q", tc.name, got, want)
		}
	}
}

// dumpKeys returns db's keys under prefix, each followed by its value.
func dumpKeys(t *testing.T, db *badger.DB, prefix []byte) [][]byte {
	t.Helper()
	var out [][]byte
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out = append(out, append(it.Item().KeyCopy(nil), append([]byte{0, '='}, v...)...))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The fresh records answer a fold only with every record it asks for,
// of the incarnation it reads, as last written; a record not next to
// those held starts them again, and past the bound a conversation is
// dropped.
func TestFreshRecordsAnswerOnlyWhenAllHeld(t *testing.T) {
	k := history.Key{Tenant: "t", Conversation: "a"}
	msg := func(seq uint64, text string) history.Message {
		m := textMsg("user", text)
		m.Seq = seq
		return m
	}
	f := newFreshRecords(1 << 20)
	f.add(k, 7, []history.Message{msg(1, "one"), msg(2, "two"), msg(3, "three")})
	f.add(k, 7, []history.Message{msg(2, "two again"), msg(4, "four")})
	for _, tc := range []struct {
		name      string
		inc       uint64
		from, to  uint64
		want      []string // texts; nil: not answered
		wantEmpty bool
	}{
		{name: "all held", inc: 7, from: 1, to: 5, want: []string{"one", "two again", "three", "four"}},
		{name: "a tail", inc: 7, from: 3, to: 5, want: []string{"three", "four"}},
		{name: "one past what is held", inc: 7, from: 2, to: 6},
		{name: "before what is held", inc: 7, from: 0, to: 3},
		{name: "another incarnation", inc: 8, from: 1, to: 5},
		{name: "nothing asked", inc: 7, from: 5, to: 5, wantEmpty: true},
	} {
		got, ok := f.take(k, tc.inc, tc.from, tc.to)
		if ok != (tc.want != nil || tc.wantEmpty) {
			t.Errorf("%s: got answered %v", tc.name, ok)
			continue
		}
		var texts []string
		for i := range got {
			texts = append(texts, string(got[i].Raw[len(`{"role":"user","content":"`):len(got[i].Raw)-2]))
		}
		if strings.Join(texts, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.name, texts, tc.want)
		}
	}
	f.trim(k, 3)
	if _, ok := f.take(k, 7, 2, 5); ok {
		t.Error("after trim(3): got seq 2 answered")
	}
	if _, ok := f.take(k, 7, 3, 5); !ok {
		t.Error("after trim(3): got seqs 3-4 unanswered")
	}
	f.add(k, 7, []history.Message{msg(9, "nine")})
	if _, ok := f.take(k, 7, 3, 5); ok {
		t.Error("after a record not next to them: got the old ones answered")
	}
	f.trim(k, 10)
	if f.size != 0 || len(f.convs) != 0 {
		t.Errorf("all trimmed: got %d bytes in %d conversations, want none", f.size, len(f.convs))
	}
	small := newFreshRecords(100)
	small.add(k, 7, []history.Message{msg(1, strings.Repeat("x", 200))})
	if _, ok := small.take(k, 7, 1, 2); ok || small.size != 0 {
		t.Errorf("past the bound: got answered %v, %d bytes held; want dropped", ok, small.size)
	}
}

// A fold round whose records were all handed over reads the metadata
// from the committer's cache, not from Badger; with nothing handed over
// it reads it from its snapshot.
func TestFoldTakesHandedOverMetadataFromTheCache(t *testing.T) {
	for _, handOver := range []bool{true, false} {
		s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
		if !handOver {
			s.fresh = nil
		}
		for c := range 3 {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
			commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "a question"), textMsg("assistant", "an answer")}})
		}
		if err := s.Fold(); err != nil {
			t.Fatal(err)
		}
		n := s.foldMetaReads.Load()
		if handOver && n != 0 {
			t.Errorf("handed over: the fold read %d conversations' metadata from Badger, want none", n)
		}
		if !handOver && n != 3 {
			t.Errorf("nothing handed over: the fold read %d conversations' metadata from Badger, want 3", n)
		}
	}
}

// The committer's cache may be newer than a fold round's snapshot: a
// commit landed after the round took it. The round then indexes the
// records the cache covers, all committed, and moves the watermark and
// marks the listing entry clean at that version, as a round that read
// after the commit would.
func TestFoldIndexesWhatLandedAfterItsSnapshot(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "early question"), textMsg("assistant", "early answer")}})
	landed := false
	s.afterFoldSnapshot = func() {
		if landed {
			return
		}
		landed = true
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "late question"), textMsg("assistant", "late answer")}})
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if !landed {
		t.Fatal("no commit landed after the fold's snapshot")
	}
	for term, want := range map[string][]uint64{"early": {1, 2}, "late": {3, 4}} {
		seqs, err := postingSeqs(s.side, k, term)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs, want) {
			t.Errorf("postings of %q: got %v, want %v", term, seqs, want)
		}
	}
	err := s.db.View(func(txn *badger.Txn) error {
		tot, err := readTotals(txn, k)
		if err != nil {
			return err
		}
		m, _, err := readMetaHead(txn, convPrefix(k))
		if err != nil {
			return err
		}
		if tot.indexed != m.NextSeq || tot.docs != 4 {
			t.Errorf("totals: indexed %d, docs %d; want indexed %d (NextSeq), docs 4", tot.indexed, tot.docs, m.NextSeq)
		}
		item, err := txn.Get(listKey(k, m.UpdatedAt))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if dirty(v) {
				t.Error("the listing entry is still dirty after a fold of every record")
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}
