package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// The listing and search indexes (key layouts in the package doc). Every
// entry is written in the transaction that writes what it describes.

// totals are a conversation's search statistics, kept in a key of their
// own (w/tenant/conversation) that commits neither read nor write (but a
// hard forget's), so that the folder, which moves them, never makes a
// commit conflict: how many of
// its records are indexed (active or not: erased and deleted ones leave)
// and their length in terms (search.Stats), and where the indexed
// records end. Records from indexed on have no postings yet: a commit
// writes none (the hot path stays as cheap as before the index), Search
// analyses them as it meets them, and the folder writes their postings
// in the background (fold.go).
type totals struct {
	docs, terms int
	// indexed is the first sequence number not indexed (0 or 1: none is).
	indexed uint64
}

// from returns the first sequence number not indexed.
func (t totals) from() uint64 { return max(t.indexed, 1) }

func (t totals) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(max(t.docs, 0)))
	dst = binary.AppendUvarint(dst, uint64(max(t.terms, 0)))
	return binary.AppendUvarint(dst, t.indexed)
}

// decodeTotals decodes totals and returns how many bytes they took (0 if
// they are malformed).
func decodeTotals(v []byte) (totals, int) {
	docs, n := binary.Uvarint(v)
	if n <= 0 {
		return totals{}, 0
	}
	terms, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return totals{}, 0
	}
	indexed, o := binary.Uvarint(v[n+m:])
	if o <= 0 {
		return totals{}, 0
	}
	return totals{docs: int(docs), terms: int(terms), indexed: indexed}, n + m + o
}

func listPrefix(tenant string) []byte {
	b := make([]byte, 0, 3+len(tenant))
	b = append(b, 'l', 0)
	b = append(b, tenant...)
	return append(b, 0)
}

// listKey is a conversation's listing entry: ^updated sorts the newest
// first.
func listKey(k history.Key, updated int64) []byte {
	b := make([]byte, 0, 11+len(k.Tenant)+len(k.Conversation))
	b = append(b, 'l', 0)
	b = append(b, k.Tenant...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, ^uint64(updated))
	return append(b, k.Conversation...)
}

// parseListKey returns the update time and conversation of a listing
// entry under prefix.
func parseListKey(prefix, key []byte) (updated int64, conv []byte) {
	rest := key[len(prefix):]
	return int64(^binary.BigEndian.Uint64(rest)), rest[8:]
}

// Listing entry values: whether the conversation may have records not
// indexed yet. Every commit writes dirty without reading the entry (a
// read would make it conflict with the folder); the folder writes clean
// once it has indexed everything.
var (
	listDirty = []byte{1}
	listClean = []byte{0}
)

// moveListing replaces the listing entry of the conversation as old left
// it with the one of next, dirty.
func moveListing(txn *badger.Txn, k history.Key, old, next *history.Meta) error {
	if old.Version > 0 && old.UpdatedAt != next.UpdatedAt {
		if err := txn.Delete(listKey(k, old.UpdatedAt)); err != nil {
			return err
		}
	}
	return txn.Set(listKey(k, next.UpdatedAt), listDirty)
}

// dirty reports whether a listing entry's value says the conversation may
// have records not indexed.
func dirty(v []byte) bool { return len(v) == 0 || v[0] != 0 }

func totalsPrefix(tenant string) []byte {
	b := make([]byte, 0, 3+len(tenant))
	b = append(b, 'w', 0)
	b = append(b, tenant...)
	return append(b, 0)
}

func totalsKey(k history.Key) []byte {
	return append(totalsPrefix(k.Tenant), k.Conversation...)
}

// readTotals returns the conversation's totals (zero if it has none).
func readTotals(txn *badger.Txn, k history.Key) (totals, error) {
	item, err := txn.Get(totalsKey(k))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return totals{}, nil
	}
	if err != nil {
		return totals{}, err
	}
	var t totals
	err = item.Value(func(v []byte) error {
		var n int
		if t, n = decodeTotals(v); n <= 0 {
			return errors.New("bad totals")
		}
		return nil
	})
	return t, err
}

func setTotals(txn *badger.Txn, k history.Key, t totals) error {
	return txn.Set(totalsKey(k), t.append(nil))
}

// posting is a posting as a segment holds it: the term's frequency in the
// message, the message's length in terms and its time (ties rank newest
// first).
type posting struct {
	tf, dl  int
	created int64
}

// setter is a transaction or a write batch.
type setter interface {
	Set(key, value []byte) error
}

// setRecord writes a message record.
func setRecord(txn setter, prefix []byte, m *history.Message, buf []byte) ([]byte, error) {
	buf = history.AppendMessage(buf[:0], m)
	return buf, txn.Set(msgKey(prefix, m.Seq), bytes.Clone(buf))
}

// deleteRecord deletes message msg's record (its postings are gone
// already, see purge), and uncounts it from t if it was indexed.
func deleteRecord(txn *badger.Txn, prefix []byte, msg *history.Message, t *totals) error {
	if msg.Seq < t.from() { // indexed: counted
		_, dl := search.Analyze(msg.Text())
		t.docs--
		t.terms -= dl
	}
	return txn.Delete(msgKey(prefix, msg.Seq))
}
