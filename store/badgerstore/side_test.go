package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// Exchange records are written to the records database, not the main one
// (whose logs a durable commit syncs), and are read back from it after a
// reopen.
func TestExchangeRecordsLiveInTheirOwnDatabase(t *testing.T) {
	s, dir, k, m := ownStore(t, textMsg("user", "hello"), textMsg("assistant", "hi"))
	ctx := context.Background()
	recs := []history.ExchangeRecord{{ID: history.NewExchangeID(1), Incarnation: m.Incarnation}, {ID: history.NewExchangeID(2), Incarnation: m.Incarnation}}
	if err := s.AppendExchanges(ctx, k, recs); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, s, append(convPrefix(k), 'e')); n != 0 {
		t.Errorf("the main database holds %d record keys, want 0", n)
	}
	if n := countRecordKeys(t, s, append(convPrefix(k), 'e')); n != 2 {
		t.Errorf("the records database holds %d record keys, want 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, sideDir, badger.ManifestFilename)); err != nil {
		t.Errorf("no records database in the data directory: %v", err)
	}
	s = openT(t, dir, Options{})
	got, err := s.Exchanges(ctx, k, "", 10)
	if err != nil || len(got) != 2 || got[0].ID != recs[1].ID {
		t.Errorf("after a reopen: %d records (%v), want both, newest first", len(got), err)
	}
}

// A directory written by an earlier version, with its records in the main
// database, has them moved on Open: listed as before, none left in the
// main database, moved once.
func TestRecordsMovedOutOfTheMainDatabase(t *testing.T) {
	s, dir, k, m := ownStore(t, textMsg("user", "hello"), textMsg("assistant", "hi"))
	ctx := context.Background()
	// The earlier layout: records beside the metadata, no mark.
	var ids []string
	err := s.db.Update(func(txn *badger.Txn) error {
		for n := range uint64(300) {
			r := history.ExchangeRecord{ID: history.NewExchangeID(n + 1), Incarnation: m.Incarnation}
			key, err := exchangeKey(convPrefix(k), r.ID)
			if err != nil {
				return err
			}
			v, err := history.MarshalExchange(&r)
			if err != nil {
				return err
			}
			ids = append(ids, r.ID)
			if err := txn.Set(key, v); err != nil {
				return err
			}
		}
		return txn.Delete(sideKey)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpen(t, dir, Options{})
	if n := countKeys(t, s, append(convPrefix(k), 'e')); n != 0 {
		t.Errorf("after the move the main database holds %d record keys, want 0", n)
	}
	got, err := s.Exchanges(ctx, k, "", 1000)
	if err != nil || len(got) != history.MaxExchangeRecords || got[0].ID != ids[len(ids)-1] {
		t.Fatalf("after the move: %d records (%v), want the newest %d", len(got), err, history.MaxExchangeRecords)
	}
	if n := countRecordKeys(t, s, append(convPrefix(k), 'e')); n != len(ids) {
		t.Errorf("the records database holds %d record keys, want all %d moved", n, len(ids))
	}
	if n := countKeys(t, s, sideKey); n != 1 {
		t.Errorf("no mark after the move: the next Open would look again")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// An append that read the metadata before a Delete began writes before
// the Delete's purge of the records, never after it: the deleted
// conversation keeps no record.
func TestAppendRacingADeleteLeavesNoRecord(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	purging := make(chan struct{})
	deleted := make(chan error, 1)
	s.beforeRecordPurge = func() { close(purging) }
	s.beforeRecordWrite = func() {
		s.beforeRecordWrite = nil
		go func() { deleted <- s.Delete(ctx, k) }()
		select {
		case <-purging: // the Delete's mark is set and its purge is about to start
		case err := <-deleted:
			t.Errorf("the Delete finished before the append wrote (%v)", err)
		case <-time.After(10 * time.Second):
			t.Error("the Delete never reached its purge of the records")
		}
	}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1), Incarnation: m.Incarnation}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Delete never finished")
	}
	if n := countRecordKeys(t, s, append(convPrefix(k), 'e')); n != 0 {
		t.Errorf("the deleted conversation keeps %d record keys, want 0", n)
	}
	// And an append after the Delete writes none.
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(2), Incarnation: m.Incarnation}}); err != nil {
		t.Fatal(err)
	}
	if n := countRecordKeys(t, s, append(convPrefix(k), 'e')); n != 0 {
		t.Errorf("an append after the Delete wrote %d record keys, want 0", n)
	}
}

// A store opened read-only (on a full disk) on a directory whose side
// database is gone opens and lists no records; on an earlier version's
// directory, not moved yet, it reads them where they are.
func TestReadOnlyWithoutASideDatabase(t *testing.T) {
	s, dir, k, m := ownStore(t, textMsg("user", "walrus"), textMsg("assistant", "hi"))
	ctx := context.Background()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, sideDir)); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir, Options{ReadOnly: true})
	got, err := s.Exchanges(ctx, k, "", 10)
	if err != nil || len(got) != 0 {
		t.Errorf("read-only without a side database: %d records, %v; want none, no error", len(got), err)
	}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1)}}); !errors.Is(err, history.ErrNoSpace) {
		t.Errorf("an append to a read-only store: %v, want ErrNoSpace", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// An earlier version's layout: a record and the segments in the main
	// database, no mark.
	dir = t.TempDir()
	s = mustOpen(t, dir, Options{})
	m = commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus"), textMsg("assistant", "hi")}})
	r := history.ExchangeRecord{ID: history.NewExchangeID(7), Incarnation: m.Incarnation}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{r}); err != nil {
		t.Fatal(err)
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	toEarlierLayout(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{ReadOnly: true})
	got, err = s.Exchanges(ctx, k, "", 10)
	if err != nil || len(got) != 1 || got[0].ID != r.ID {
		t.Errorf("read-only on an earlier layout: %v, %v; want the record in the main database", got, err)
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "walrus", Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("read-only on an earlier layout: search %v, %v; want seq 1", hits, err)
	}
}

// toEarlierLayout puts s's directory back in the layout of the versions
// before the side database: its keys (but the side counter) in the main
// database, no mark.
func toEarlierLayout(t *testing.T, s *Store) {
	t.Helper()
	var keys, vals [][]byte
	err := s.side.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if bytes.Equal(it.Item().Key(), segCounterKey) {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			keys, vals = append(keys, it.Item().KeyCopy(nil)), append(vals, v)
		}
		return nil
	})
	if err == nil {
		err = s.db.Update(func(txn *badger.Txn) error {
			for i := range keys {
				if err := txn.Set(keys[i], vals[i]); err != nil {
					return err
				}
			}
			return txn.Delete(sideKey)
		})
	}
	if err == nil {
		err = s.side.DropAll()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sideKeysWith returns the side database's segment keys ('i', 'f') whose
// key holds sub.
func sideKeysWith(t *testing.T, s *Store, sub string) []string {
	t.Helper()
	var out []string
	err := s.side.View(func(txn *badger.Txn) error {
		for _, p := range [][]byte{{'i', 0}, {'f', 0}} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
			for it.Rewind(); it.Valid(); it.Next() {
				if k := string(it.Item().Key()); strings.Contains(k, sub) {
					out = append(out, k)
				}
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A fold writes its segments to the side database; the main one keeps
// the watermarks and no posting.
func TestSegmentsLiveInTheSideDatabase(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus tusks"), textMsg("assistant", "ivory")}})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []byte{'i', 'f'} {
		if n := countKeys(t, s, []byte{p, 0}); n != 0 {
			t.Errorf("the main database holds %d %q keys, want none", n, p)
		}
	}
	if got := sideKeysWith(t, s, "walrus"); len(got) != 1 {
		t.Errorf("the side database's keys for walrus: %q, want one", got)
	}
	hits, err := s.Search(context.Background(), "t", history.SearchQuery{Text: "walrus", Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Message.Seq != 1 {
		t.Errorf("search: %v, %v; want seq 1", hits, err)
	}
}

// A search that reads the main database before a fold round moves its
// watermark, and the side database after the round wrote its segments,
// counts each record once: postings past the watermark it read are the
// backlog's, which it analyses itself.
func TestSearchIgnoresPostingsPastItsWatermark(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	for c := range 3 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus tusks "+strconv.Itoa(c)), textMsg("assistant", "walrus ivory")}})
	}
	queries := []history.SearchQuery{{Text: "walrus ivory", Limit: 10}, {Text: "walrus", Conversation: "c1", Limit: 10}}
	var during [][]history.Hit
	s.beforeFoldCommit = func() { // the segments are in the side database; the watermarks have not moved
		s.beforeFoldCommit = nil
		for _, q := range queries {
			hits, err := s.Search(ctx, "t", q)
			if err != nil {
				t.Error(err)
			}
			during = append(during, hits)
		}
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if len(during) != len(queries) {
		t.Fatal("the fold never reached its commit")
	}
	for i, q := range queries {
		after, err := s.Search(ctx, "t", q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(during[i], after) {
			t.Errorf("%+v: during the fold %v, after it %v; want the same hits and scores", q, during[i], after)
		}
	}
}

// A fold round whose main transaction fails after its segments were
// written deletes them. Here it is too big: the round is made again with
// half the records under the same segment number, and the records left
// out go to the next segment; a posting of the first attempt left behind
// would count them twice.
func TestFailedFoldRoundDropsItsSegments(t *testing.T) {
	s := openT(t, t.TempDir(), Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	var msgs []history.Message
	for i := range foldMessages / 2 {
		msgs = append(msgs, textMsg("user", "head "+strconv.Itoa(i)))
	}
	for i := range 20 {
		msgs = append(msgs, textMsg("user", "tailword "+strconv.Itoa(i)))
	}
	commitT(t, s, k, history.Change{Append: msgs})
	failed := false
	s.failFoldCommit = func() error {
		if failed {
			return nil
		}
		failed = true
		return badger.ErrTxnTooBig
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Fatal("the fold never reached its commit")
	}
	if got := sideKeysWith(t, s, "tailword"); len(got) != 1 {
		t.Errorf("keys of tailword: %q, want one (the second round's)", got)
	}
	hits, err := s.Search(context.Background(), "t", history.SearchQuery{Text: "tailword", Limit: 100})
	if err != nil || len(hits) != 20 {
		t.Errorf("search: %d hits, %v; want 20", len(hits), err)
	}
}

// Segments a fold wrote to the side database without committing them in
// the main one (a crash between: the side counter past the main one) are
// dropped by the next Open.
func TestOrphanSegmentsDroppedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus tusks")}})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	committed := s.segment
	var b segBuilder
	orphan := textMsg("user", "orphanword")
	orphan.Seq = 2
	b.add(k.Conversation, &orphan)
	err := s.side.Update(func(txn *badger.Txn) error {
		if err := b.write(txn, k.Tenant, committed+1); err != nil {
			return err
		}
		return txn.Set(segCounterKey, binary.BigEndian.AppendUint64(nil, committed+1))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	if got := sideKeysWith(t, s, "orphanword"); len(got) != 0 {
		t.Errorf("the unfinished fold's keys after Open: %q, want none", got)
	}
	if got := sideKeysWith(t, s, "walrus"); len(got) != 1 {
		t.Errorf("the committed fold's keys after Open: %q, want one", got)
	}
	if n, err := s.sideCounter(); err != nil || n != committed {
		t.Errorf("the side counter after Open: %d, %v; want %d", n, err, committed)
	}
}

// Fold rounds do not sync the side database: a machine crash can lose
// segments whose watermarks the main database kept (the side counter
// falls behind the main one). The next Open rebuilds the search index,
// and searches find what they found before the crash.
func TestLostSegmentsRebuiltAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	a := history.Key{Tenant: "t", Conversation: "a"}
	b := history.Key{Tenant: "t", Conversation: "b"}
	commitT(t, s, a, history.Change{Append: []history.Message{textMsg("user", "walrus tusks")}})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	kept := s.segment
	commitT(t, s, b, history.Change{Append: []history.Message{textMsg("user", "walrus ivory")}})
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	if s.segment != kept+1 {
		t.Fatalf("segments %d then %d, want one more", kept, s.segment)
	}
	// What the crash loses: the last round's segment and the side
	// counter that numbered it.
	err := s.side.Update(func(txn *badger.Txn) error {
		for _, p := range [][]byte{{'i', 0}, {'f', 0}} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
			var lost [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				key := it.Item().Key()
				if len(key) >= 8 && binary.BigEndian.Uint64(key[len(key)-8:]) > kept {
					lost = append(lost, it.Item().KeyCopy(nil))
				}
			}
			it.Close()
			for _, key := range lost {
				if err := txn.Delete(key); err != nil {
					return err
				}
			}
		}
		return txn.Set(segCounterKey, binary.BigEndian.AppendUint64(nil, kept))
	})
	if err != nil {
		t.Fatal(err)
	}
	q := history.SearchQuery{Text: "ivory", Limit: 10}
	if hits, err := s.Search(ctx, "t", q); err != nil || len(hits) != 0 {
		t.Fatalf("search with the segment lost: %d hits, %v; want none (the loss this test recovers from)", len(hits), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	hits, err := s.Search(ctx, "t", q)
	if err != nil || len(hits) != 1 || hits[0].Conversation != b.Conversation {
		t.Errorf("search for ivory after Open: %+v, %v; want conversation b's message", hits, err)
	}
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "walrus", Limit: 10}); err != nil || len(hits) != 2 {
		t.Errorf("search for walrus after Open: %d hits, %v; want 2", len(hits), err)
	}
	if n, err := s.sideCounter(); err != nil || n != s.segment {
		t.Errorf("the side counter after Open: %d, %v; want the main one, %d", n, err, s.segment)
	}
	if got := len(sideKeysWith(t, s, "tusks")); got != 1 {
		t.Errorf("keys of tusks after Open: %d, want 1 (the rebuilt index's alone)", got)
	}
}

// A directory written by an earlier version, with its search segments in
// the main database, has them moved on Open: searches find what they
// found, and the main database holds none.
func TestSegmentsMovedOutOfTheMainDatabase(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir, Options{IndexBacklog: 1 << 30})
	ctx := context.Background()
	for c := range 3 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus tusks "+strconv.Itoa(c)), textMsg("assistant", "walrus ivory")}})
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	q := history.SearchQuery{Text: "walrus ivory", Limit: 10}
	before, err := s.Search(ctx, "t", q)
	if err != nil || len(before) == 0 {
		t.Fatalf("search: %v, %v", before, err)
	}
	toEarlierLayout(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{IndexBacklog: 1 << 30})
	for _, p := range []byte{'g', 'i', 'f'} {
		if n := countKeys(t, s, []byte{p, 0}); n != 0 {
			t.Errorf("after the move the main database holds %d %q keys, want none", n, p)
		}
	}
	after, err := s.Search(ctx, "t", q)
	if err != nil || !reflect.DeepEqual(before, after) {
		t.Errorf("after the move: %v, %v; want %v", after, err, before)
	}
	if n, err := s.sideCounter(); err != nil || n != s.segment || n == 0 {
		t.Errorf("the side counter after the move: %d, %v; want the main one, %d", n, err, s.segment)
	}
}
