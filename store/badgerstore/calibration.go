package badgerstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

var _ history.CalibrationStore = (*Store)(nil)

// calibrationPrefix is the prefix of tenant's calibration keys (all
// tenants' if tenant is "" and all is set).
func calibrationPrefix(tenant string, all bool) []byte {
	b := []byte{'k', 0}
	if all {
		return b
	}
	b = append(b, tenant...)
	return append(b, 0)
}

// PutCalibrations replaces tenant's calibrations with cals, one key per
// model, in one transaction. It bypasses the committer: calibrations are
// written off the request path, a few times a minute at most.
func (s *Store) PutCalibrations(ctx context.Context, tenant string, cals []history.Calibration) error {
	if err := s.CanCommit(); err != nil {
		return err
	}
	prefix := calibrationPrefix(tenant, false)
	vals := make([][]byte, len(cals))
	for i := range cals {
		var err error
		if vals[i], err = json.Marshal(&cals[i]); err != nil {
			return fmt.Errorf("badgerstore: put calibrations %s: %w", tenant, err)
		}
	}
	err := s.db.Update(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		var old [][]byte
		for it.Rewind(); it.Valid(); it.Next() {
			old = append(old, it.Item().KeyCopy(nil))
		}
		it.Close()
		for _, k := range old {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		for i, c := range cals {
			if err := txn.Set(append(bytes.Clone(prefix), c.Model...), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("badgerstore: put calibrations %s: %w", tenant, err)
	}
	return nil
}

// Calibrations reads every tenant's calibrations.
func (s *Store) Calibrations(ctx context.Context) (map[string][]history.Calibration, error) {
	out := map[string][]history.Calibration{}
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = calibrationPrefix("", true)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			tenant, _, ok := bytes.Cut(key[2:], []byte{0})
			if !ok {
				continue
			}
			var c history.Calibration
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &c) }); err != nil {
				return fmt.Errorf("key %q: %w", key, err)
			}
			out[string(tenant)] = append(out[string(tenant)], c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: read calibrations: %w", err)
	}
	return out, nil
}
