package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/search"
)

// The listing and search indexes (key layouts in the package doc). Every
// entry is written in the transaction that writes what it describes.

// totals are a conversation's search statistics, kept in its listing
// entry: how many message records it holds (active or not: erased and
// deleted ones leave) and their length in terms (search.Stats).
type totals struct {
	docs, terms int
}

func (t totals) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(max(t.docs, 0)))
	return binary.AppendUvarint(dst, uint64(max(t.terms, 0)))
}

func decodeTotals(v []byte) totals {
	docs, n := binary.Uvarint(v)
	if n <= 0 {
		return totals{}
	}
	terms, _ := binary.Uvarint(v[n:])
	return totals{docs: int(docs), terms: int(terms)}
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

// readTotals returns the totals of the conversation whose metadata is m
// (zero for a new one).
func readTotals(txn *badger.Txn, k history.Key, m *history.Meta) (totals, error) {
	if m.Version == 0 {
		return totals{}, nil
	}
	item, err := txn.Get(listKey(k, m.UpdatedAt))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return totals{}, nil // stored before the index existed
	}
	if err != nil {
		return totals{}, err
	}
	var t totals
	err = item.Value(func(v []byte) error { t = decodeTotals(v); return nil })
	return t, err
}

// moveListing replaces the listing entry of the conversation as old left
// it with the one of next.
func moveListing(txn *badger.Txn, k history.Key, old, next *history.Meta, t totals) error {
	if old.Version > 0 && old.UpdatedAt != next.UpdatedAt {
		if err := txn.Delete(listKey(k, old.UpdatedAt)); err != nil {
			return err
		}
	}
	return txn.Set(listKey(k, next.UpdatedAt), t.append(nil))
}

// postingPrefix is the prefix of a term's postings in a tenant, or in one
// conversation of it if conv is not empty.
func postingPrefix(tenant, term, conv string) []byte {
	b := make([]byte, 0, 5+len(tenant)+len(term)+len(conv))
	b = append(b, 'i', 0)
	b = append(b, tenant...)
	b = append(b, 0)
	b = append(b, term...)
	b = append(b, 0)
	if conv != "" {
		b = append(b, conv...)
		b = append(b, 0)
	}
	return b
}

func postingKey(k history.Key, term string, seq uint64) []byte {
	b := postingPrefix(k.Tenant, term, k.Conversation)
	return binary.BigEndian.AppendUint64(b, seq)
}

// parsePosting splits a posting key under a term's tenant-wide prefix.
func parsePosting(prefix, key []byte) (conv []byte, seq uint64, ok bool) {
	rest := key[len(prefix):]
	if len(rest) < 10 || rest[len(rest)-9] != 0 {
		return nil, 0, false
	}
	return rest[:len(rest)-9], binary.BigEndian.Uint64(rest[len(rest)-8:]), true
}

// posting is a posting's value: the term's frequency in the message, the
// message's length in terms and its time (ties rank newest first).
type posting struct {
	tf, dl  int
	created int64
}

func (p posting) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(p.tf))
	dst = binary.AppendUvarint(dst, uint64(p.dl))
	return binary.AppendVarint(dst, p.created)
}

func decodePosting(v []byte) (posting, bool) {
	tf, n := binary.Uvarint(v)
	if n <= 0 {
		return posting{}, false
	}
	v = v[n:]
	dl, n := binary.Uvarint(v)
	if n <= 0 {
		return posting{}, false
	}
	created, n := binary.Varint(v[n:])
	if n <= 0 {
		return posting{}, false
	}
	return posting{tf: int(tf), dl: int(dl), created: created}, true
}

// setMessage writes a message record and its postings, and counts it in t.
func setMessage(txn *badger.Txn, k history.Key, prefix []byte, m *history.Message, buf []byte, t *totals) ([]byte, error) {
	buf = history.AppendMessage(buf[:0], m)
	if err := txn.Set(msgKey(prefix, m.Seq), bytes.Clone(buf)); err != nil {
		return buf, err
	}
	postings, dl := search.Analyze(m.Raw)
	created := m.CreatedAt.UnixNano()
	for _, p := range postings {
		v := posting{tf: p.TF, dl: dl, created: created}.append(nil)
		if err := txn.Set(postingKey(k, p.Term, m.Seq), v); err != nil {
			return buf, err
		}
	}
	t.docs++
	t.terms += dl
	return buf, nil
}

// deleteMessage deletes the record raw of message seq and its postings,
// and uncounts it from t.
func deleteMessage(txn *badger.Txn, k history.Key, prefix []byte, seq uint64, raw []byte, t *totals) error {
	msg, err := history.DecodeMessage(raw, seq)
	if err != nil {
		return err
	}
	postings, dl := search.Analyze(msg.Raw)
	for _, p := range postings {
		if err := txn.Delete(postingKey(k, p.Term, seq)); err != nil {
			return err
		}
	}
	t.docs--
	t.terms -= dl
	return txn.Delete(msgKey(prefix, seq))
}

// eraseRanges deletes the records of ranges and their postings, and
// uncounts them from t. It may fail with badger.ErrTxnTooBig.
func eraseRanges(txn *badger.Txn, k history.Key, prefix []byte, ranges []history.Range, t *totals) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = append(bytes.Clone(prefix), 's')
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	var keys [][]byte
	var vals [][]byte
	for _, r := range ranges {
		for it.Seek(msgKey(prefix, r.From)); it.Valid(); it.Next() {
			item := it.Item()
			if binary.BigEndian.Uint64(item.Key()[len(prefix)+1:]) > r.To {
				break
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			keys, vals = append(keys, item.KeyCopy(nil)), append(vals, v)
		}
	}
	it.Close() // deleting while an iterator is open would be visible to it
	for i, key := range keys {
		if err := deleteMessage(txn, k, prefix, binary.BigEndian.Uint64(key[len(prefix)+1:]), vals[i], t); err != nil {
			return err
		}
	}
	return nil
}

// docLen returns a message's length in terms.
func docLen(raw []byte) int {
	_, n := search.Analyze(raw)
	return n
}
