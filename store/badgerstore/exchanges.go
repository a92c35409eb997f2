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
// history.MaxExchangeRecords, in one transaction that also reads the
// metadata: records of a conversation that is gone (or being deleted), or
// of another incarnation, are not written. It bypasses the committer:
// records are the inspector's, written off the request path, and need not
// wait for a group's fsync.
func (s *Store) AppendExchanges(ctx context.Context, k history.Key, recs []history.ExchangeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	if err := s.CanCommit(); err != nil {
		return err
	}
	prefix := convPrefix(k)
	vals := make([][]byte, len(recs))
	keys := make([][]byte, len(recs))
	for i := range recs {
		var err error
		if keys[i], err = exchangeKey(prefix, recs[i].ID); err != nil {
			return err
		}
		if vals[i], err = history.MarshalExchange(&recs[i]); err != nil {
			return err
		}
	}
	for attempt := 0; ; attempt++ {
		err := s.db.Update(func(txn *badger.Txn) error { return appendExchanges(txn, k, prefix, recs, keys, vals) })
		if errors.Is(err, badger.ErrConflict) && attempt < commitRetries && ctx.Err() == nil {
			continue // a commit rewrote the metadata meanwhile: read it again
		}
		if err != nil {
			return fmt.Errorf("badgerstore: append exchanges %s: %w", k, err)
		}
		return nil
	}
}

// appendExchanges writes k's encoded records in txn, if the conversation
// is stored with their incarnation and no delete is under way, and trims
// them when due.
func appendExchanges(txn *badger.Txn, k history.Key, prefix []byte, recs []history.ExchangeRecord, keys, vals [][]byte) error {
	m, ok, err := readMetaHead(txn, prefix)
	if err != nil || !ok {
		return err
	}
	if _, busy, err := readPending(txn, k); err != nil || busy {
		return err // a delete under way: the records go with it
	}
	for i := range recs {
		if inc := recs[i].Incarnation; inc != 0 && inc != m.Incarnation {
			continue
		}
		if err := txn.Set(keys[i], vals[i]); err != nil {
			return err
		}
	}
	if !trimDue(recs) {
		return nil
	}
	return trimExchanges(txn, prefix)
}

// AppendExchangeBatch implements history.ExchangeBatcher: every
// conversation's records in one transaction (retried on a conflict with a
// commit that rewrote one of their metadata records; past the retries,
// one transaction per conversation).
func (s *Store) AppendExchangeBatch(ctx context.Context, batch []history.KeyedExchanges) error {
	if err := s.CanCommit(); err != nil {
		return err
	}
	type enc struct {
		prefix     []byte
		keys, vals [][]byte
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
	for attempt := 0; ; attempt++ {
		err := s.db.Update(func(txn *badger.Txn) error {
			for b, e := range batch {
				if len(e.Records) == 0 {
					continue
				}
				if err := appendExchanges(txn, e.Key, encs[b].prefix, e.Records, encs[b].keys, encs[b].vals); err != nil {
					return err
				}
			}
			return nil
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, badger.ErrConflict) && attempt < commitRetries && ctx.Err() == nil:
			continue
		case errors.Is(err, badger.ErrConflict) || errors.Is(err, badger.ErrTxnTooBig):
			for _, e := range batch {
				if err := s.AppendExchanges(ctx, e.Key, e.Records); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("badgerstore: append exchange batch: %w", err)
	}
}

// trimDue reports whether an append trims the conversation's records:
// always for a batch, else about one single append in 16 (the last hex
// digit of the record's id, a nanosecond clock, is 0). Trimming iterates
// every record key of the conversation, which on every request cost the
// request path's core more than the record itself; between trims a
// conversation holds a few records past the cap, which Exchanges never
// lists.
func trimDue(recs []history.ExchangeRecord) bool {
	if len(recs) > 1 {
		return true
	}
	id := recs[0].ID
	return id == "" || id[len(id)-1] == '0'
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
	err := s.db.View(func(txn *badger.Txn) error {
		if _, ok, err := readMetaHead(txn, prefix); err != nil || !ok {
			return err // gone, or being deleted: its records are too
		}
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
// bounded batch per transaction (a Delete's pending work).
func (s *Store) purgeExchanges(prefix []byte) error {
	for {
		n := 0
		err := s.db.Update(func(txn *badger.Txn) error {
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
		if errors.Is(err, badger.ErrConflict) {
			continue
		}
		if err != nil || n < purgeBatch {
			return err
		}
	}
}
