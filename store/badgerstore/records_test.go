package badgerstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// Exchange records are written to the records database, not the main one
// (whose logs a durable commit syncs), and are read back from it after a
// reopen.
func TestExchangeRecordsLiveInTheirOwnDatabase(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
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
	if _, err := os.Stat(filepath.Join(dir, recordsDir, badger.ManifestFilename)); err != nil {
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
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	// The earlier layout: records beside the metadata, no mark.
	var ids []string
	err = s.db.Update(func(txn *badger.Txn) error {
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
		return txn.Delete(recordsMovedKey)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
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
	if n := countKeys(t, s, recordsMovedKey); n != 1 {
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

// A store opened read-only on a directory without a records database (an
// earlier version's, on a full disk) opens, and lists no records.
func TestReadOnlyWithoutARecordsDatabase(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, recordsDir)); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{ReadOnly: true})
	got, err := s.Exchanges(context.Background(), k, "", 10)
	if err != nil || len(got) != 0 {
		t.Errorf("read-only without records: %d records, %v; want none, no error", len(got), err)
	}
	if err := s.AppendExchanges(context.Background(), k, []history.ExchangeRecord{{ID: history.NewExchangeID(1)}}); !errors.Is(err, history.ErrNoSpace) {
		t.Errorf("an append to a read-only store: %v, want ErrNoSpace", err)
	}
}
