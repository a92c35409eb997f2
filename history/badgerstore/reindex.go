package badgerstore

import (
	"bytes"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/search"
)

// indexKey records the version of the listing and search indexes the
// database holds; a database written before them has none.
var indexKey = []byte("v\x00index")

const indexVersion = 1

// buildIndexes builds the listing and search indexes of a database
// written before they existed, once, at Open (nothing else writes yet):
// a listing entry per conversation and the postings of its records, in
// bounded transactions. Interrupted, it starts again at the next Open
// (every write is idempotent).
func (s *Store) buildIndexes() error {
	var built bool
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(indexKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		built = err == nil
		return err
	})
	if err != nil || built {
		return err
	}
	var keys []history.Key
	err = s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{'c', 0}
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			// c \x00 tenant \x00 conversation \x00 'm' (ids hold no NUL;
			// a record's key ends in 's' and 8 bytes, which may be "\x00m").
			rest := it.Item().Key()[2:]
			i := bytes.IndexByte(rest, 0)
			if i < 0 {
				continue
			}
			conv := rest[i+1:]
			j := bytes.IndexByte(conv, 0)
			if j < 0 || !bytes.Equal(conv[j+1:], []byte{'m'}) {
				continue
			}
			keys = append(keys, history.Key{Tenant: string(rest[:i]), Conversation: string(conv[:j])})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.indexConversation(k); err != nil {
			return err
		}
	}
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(indexKey, []byte{indexVersion}) })
}

// indexConversation writes the postings of k's records (those the
// metadata shows: below NextSeq, not erased), then its listing entry with
// their totals.
func (s *Store) indexConversation(k history.Key) error {
	prefix := convPrefix(k)
	var m history.Meta
	var t totals
	for from := uint64(1); ; {
		var next uint64
		var batch totals
		err := s.db.Update(func(txn *badger.Txn) error {
			var err error
			if m, _, err = readMeta(txn, prefix); err != nil {
				return err
			}
			var setErr error
			n := 0
			err = iterate(txn, prefix, &m, from-1, func(msg history.Message) bool {
				if n == purgeBatch {
					next = msg.Seq
					return false
				}
				postings, dl := search.Analyze(msg.Raw)
				for _, p := range postings {
					v := posting{tf: p.TF, dl: dl, created: msg.CreatedAt.UnixNano()}.append(nil)
					if setErr = txn.Set(postingKey(k, p.Term, msg.Seq), v); setErr != nil {
						if errors.Is(setErr, badger.ErrTxnTooBig) && n > 0 {
							setErr, next = nil, msg.Seq // this message again, in the next batch
						}
						return false
					}
				}
				n++
				batch.docs++
				batch.terms += dl
				return true
			})
			if err == nil {
				err = setErr
			}
			return err
		})
		if err != nil {
			return err
		}
		t.docs += batch.docs
		t.terms += batch.terms
		if next == 0 {
			break
		}
		from = next
	}
	t.indexed = max(m.NextSeq, 1)
	return s.db.Update(func(txn *badger.Txn) error {
		if err := setTotals(txn, k, t); err != nil {
			return err
		}
		return txn.Set(listKey(k, m.UpdatedAt), listClean)
	})
}
