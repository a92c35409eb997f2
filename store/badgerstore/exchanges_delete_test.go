package badgerstore

import (
	"context"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// A Delete purges the conversation's exchange records from their database,
// not only from reads: no 'e' key of it is left.
func TestDeletePurgesExchangeRecords(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	var recs []history.ExchangeRecord
	for n := range uint64(300) {
		recs = append(recs, history.ExchangeRecord{ID: history.NewExchangeID(n + 1), Incarnation: m.Incarnation})
	}
	if err := s.AppendExchanges(ctx, k, recs); err != nil {
		t.Fatal(err)
	}
	if got := countRecordKeys(t, s, append(convPrefix(k), 'e')); got != history.MaxExchangeRecords {
		t.Fatalf("after appending 300: %d record keys, want %d", got, history.MaxExchangeRecords)
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if got := countRecordKeys(t, s, append(convPrefix(k), 'e')); got != 0 {
		t.Errorf("after the delete: %d record keys, want 0", got)
	}
}

func countKeys(t *testing.T, s *Store, prefix []byte) int {
	t.Helper()
	return countIn(t, s.db, prefix)
}

// countRecordKeys counts the keys with prefix in the records database.
func countRecordKeys(t *testing.T, s *Store, prefix []byte) int {
	t.Helper()
	return countIn(t, s.side, prefix)
}

// countIn counts the keys with prefix in db (every key for nil).
func countIn(t *testing.T, db *badger.DB, prefix []byte) int {
	t.Helper()
	n := 0
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
