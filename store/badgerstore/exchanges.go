package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// exchangeKey is the key of a conversation's exchange record: 'e' and the
// number of its id (history.NewExchangeID), big-endian, so that a
// conversation's records sort oldest first.
func exchangeKey(prefix []byte, id string) ([]byte, error) {
	if !history.ValidExchangeID(id) {
		return nil, fmt.Errorf("badgerstore: exchange id %q is not of the form xch_<16 hex digits>", id)
	}
	n, err := strconv.ParseUint(id[4:], 16, 64)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: exchange id %q: %w", id, err)
	}
	b := make([]byte, len(prefix), len(prefix)+9)
	copy(b, prefix)
	b = append(b, 'e')
	return binary.BigEndian.AppendUint64(b, n), nil
}

// AppendExchanges writes recs and drops the oldest records past
// history.MaxExchangeRecords: records of a conversation that is gone (or
// being deleted), or of another incarnation, are not written. It bypasses
// the committer: records are the inspector's, written off the request
// path to their own database (records.go), and need not wait for a
// group's fsync.
func (s *Store) AppendExchanges(ctx context.Context, k history.Key, recs []history.ExchangeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	return s.AppendExchangeBatch(ctx, []history.KeyedExchanges{{Key: k, Records: recs}})
}

// AppendExchangeBatch implements history.ExchangeBatcher: every
// conversation's records in one transaction of the records database (one
// per conversation if they are too many for one), after one read of
// their metadata, all under recMu (see side.go).
func (s *Store) AppendExchangeBatch(ctx context.Context, batch []history.KeyedExchanges) error {
	if err := s.CanCommit(); err != nil {
		return err
	}
	type enc struct {
		prefix     []byte
		keys, vals [][]byte
		live       bool   // stored, and no delete under way
		inc        uint64 // its incarnation
	}
	encs := make([]enc, len(batch))
	for b, e := range batch {
		encs[b] = enc{prefix: convPrefix(e.Key), keys: make([][]byte, len(e.Records)), vals: make([][]byte, len(e.Records))}
		for i := range e.Records {
			var err error
			if encs[b].keys[i], err = exchangeKey(encs[b].prefix, e.Records[i].ID); err != nil {
				return err
			}
			if encs[b].vals[i], err = history.MarshalExchange(&e.Records[i]); err != nil {
				return err
			}
		}
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	err := s.db.View(func(txn *badger.Txn) error {
		for b, e := range batch {
			if len(e.Records) == 0 {
				continue
			}
			// The incarnation as the committer last wrote it, or as
			// stored: the cache lags Badger only by a group that just
			// committed, as a snapshot taken a moment earlier would. A
			// conversation in the cache has no Delete under way whose
			// purge has begun (see side.go): its pending mark is read
			// only when the metadata is.
			inc, ok := s.metas.incarnation(encs[b].prefix)
			if !ok {
				s.metaReads.Add(1)
				m, stored, err := readMetaHead(txn, encs[b].prefix)
				if err != nil {
					return err
				}
				if !stored {
					continue // gone
				}
				inc = m.Incarnation
				s.markReads.Add(1)
				if _, busy, err := readPending(txn, e.Key); err != nil || busy {
					if err != nil {
						return err
					}
					continue // a delete under way: the records go with it
				}
			}
			encs[b].live, encs[b].inc = true, inc
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("badgerstore: append exchange records: %w", err)
	}
	if s.beforeRecordWrite != nil {
		s.beforeRecordWrite()
	}
	write := func(txn *badger.Txn, b int) error {
		e := &encs[b]
		if !e.live {
			return nil
		}
		recs := batch[b].Records
		for i := range recs {
			if inc := recs[i].Incarnation; inc != 0 && inc != e.inc {
				continue
			}
			if err := txn.Set(e.keys[i], e.vals[i]); err != nil {
				return err
			}
		}
		if !history.TrimDue(recs) {
			return nil
		}
		return trimExchanges(txn, e.prefix)
	}
	err = s.side.Update(func(txn *badger.Txn) error {
		for b := range batch {
			if err := write(txn, b); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, badger.ErrTxnTooBig) {
		for b := range batch {
			if err = s.side.Update(func(txn *badger.Txn) error { return write(txn, b) }); err != nil {
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("badgerstore: append exchange records: %w", err)
	}
	return nil
}

// trimExchanges deletes the oldest exchange records past
// history.MaxExchangeRecords (reading keys only).
func trimExchanges(txn *badger.Txn, prefix []byte) error {
	opts := badger.IteratorOptions{Prefix: append(bytes.Clone(prefix), 'e')}
	it := txn.NewIterator(opts)
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		n++
	}
	var old [][]byte
	for it.Rewind(); it.Valid() && n-len(old) > history.MaxExchangeRecords; it.Next() {
		old = append(old, it.Item().KeyCopy(nil))
	}
	it.Close()
	for _, key := range old {
		if err := txn.Delete(key); err != nil {
			return err
		}
	}
	return nil
}

// Exchanges reads up to limit of k's records older than before (all, if
// before is ""), newest first.
func (s *Store) Exchanges(ctx context.Context, k history.Key, before string, limit int) ([]history.ExchangeRecord, error) {
	prefix := convPrefix(k)
	var out []history.ExchangeRecord
	var m history.Meta
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		m, ok, err = readMetaHead(txn, prefix)
		return err
	})
	if err != nil || !ok {
		return nil, err // gone, or being deleted: its records are too
	}
	err = s.side.View(func(txn *badger.Txn) error {
		ePrefix := append(bytes.Clone(prefix), 'e')
		var start []byte
		if before != "" {
			var err error
			if start, err = exchangeKey(prefix, before); err != nil {
				return err
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: ePrefix, Reverse: true, PrefetchValues: false})
		defer it.Close()
		// From the newest, so that no record past the newest
		// MaxExchangeRecords is listed (between trims a few are kept).
		seen, after := 0, before == ""
		last := append(bytes.Clone(ePrefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		for it.Seek(last); it.Valid() && len(out) < limit && seen < history.MaxExchangeRecords; it.Next() {
			seen++
			if !after {
				after = bytes.Compare(it.Item().Key(), start) < 0
				if !after {
					continue
				}
			}
			var r history.ExchangeRecord
			err := it.Item().Value(func(v []byte) error {
				var err error
				r, err = history.UnmarshalExchange(v)
				return err
			})
			if err != nil {
				return err
			}
			if r.Incarnation != 0 && r.Incarnation != m.Incarnation {
				continue // an earlier conversation's, left by a crash before its purge was synced
			}
			out = append(out, r)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: exchanges %s: %w", k, err)
	}
	return out, nil
}

// purgeExchanges deletes every exchange record of the conversation, a
// bounded batch per transaction (a Delete's pending work, after its
// mark), under recMu (finishPending syncs them gone before the mark goes).
func (s *Store) purgeExchanges(prefix []byte) error {
	if s.beforeRecordPurge != nil {
		s.beforeRecordPurge()
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	for {
		n := 0
		err := s.side.Update(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: append(bytes.Clone(prefix), 'e')})
			var keys [][]byte
			for it.Rewind(); it.Valid() && len(keys) < purgeBatch; it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			it.Close()
			for _, key := range keys {
				if err := txn.Delete(key); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil {
			return err
		}
		if n < purgeBatch {
			return nil
		}
	}
}
