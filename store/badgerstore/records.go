package badgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// The inspector's exchange records (exchanges.go) live in a Badger of
// their own, in the data directory's records subdirectory, under the keys
// the package comment lists. A durable commit syncs its database's logs,
// and that sync waits for whatever else was appended to them meanwhile:
// with the records (about 700 bytes a request, written by the
// inspector's writer between commits) in the same value log, a commit's
// fsync took 2-8 ms at the load script's open rate instead of under 1
// (docs/performance.md, "Exchange records in a database of their own").
// The records are the inspector's account of what was sent, not history:
// their database is synced every recordSyncEvery, never by a commit, and
// a machine's crash can lose the last of them as the inspector's writer
// may drop them when it falls behind.
//
// Nothing spans the two databases in one transaction. What the records
// rely on is ordered instead, in this process (one process per
// directory): appending a batch reads each conversation's metadata and
// pending mark in the main database and writes the records while holding
// recMu, and a Delete purges the records while holding it, after it set
// its pending mark. So an append either lands before the purge (which
// deletes its records) or sees the mark, or the metadata gone, and writes
// nothing: a conversation that is gone keeps no records.

// recordsDir is the records database's directory, inside the data
// directory.
const recordsDir = "records"

// recordSyncEvery is how often the records database is synced.
const recordSyncEvery = time.Second

// recordsMovedKey, in the main database, marks a store whose exchange
// records have been moved to the records database (earlier versions kept
// them in the main one).
var recordsMovedKey = []byte("v\x00records")

// openRecords opens (creating if needed) the records database of the store
// in dir. A read-only store whose directory has none reads an empty one.
func openRecords(dir string, o Options, readOnly bool) (*badger.DB, error) {
	path := filepath.Join(dir, recordsDir)
	ro := badger.DefaultOptions(path).
		WithMemTableSize(4 << 20).
		WithNumMemtables(2).
		WithCompression(options.None).
		WithBlockCacheSize(4 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(false).
		WithSyncWrites(false).
		WithLogger(slogAdapter{o.Logger})
	if readOnly && !o.InMemory {
		if _, err := os.Stat(filepath.Join(path, badger.ManifestFilename)); err != nil {
			o.InMemory = true
		} else {
			ro = ro.WithReadOnly(true)
		}
	}
	if o.InMemory {
		// Values stay in memory, the tree's up to Badger's 1 MiB default
		// threshold, which wants a larger memtable.
		ro = ro.WithInMemory(true).WithDir("").WithValueDir("").WithMemTableSize(16 << 20)
	} else {
		ro = ro.WithValueThreshold(valueThreshold) // the tree holds keys and pointers (see valueThreshold)
	}
	db, err := badger.Open(ro)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: open %s: %w", path, err)
	}
	return db, nil
}

// moveRecords moves the exchange records an earlier version kept in the
// main database into the records database, once: copied and synced
// there, then deleted here with the mark set. A crash in between copies
// them again on the next Open.
func (s *Store) moveRecords() error {
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(recordsMovedKey)
		return err
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, badger.ErrKeyNotFound) {
		return err
	}
	each := func(fn func(key []byte, item *badger.Item) error) error {
		return s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{'c', 0}})
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				if isExchangeKey(it.Item().Key()) {
					if err := fn(it.Item().KeyCopy(nil), it.Item()); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	wb := s.rec.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	err = each(func(key []byte, item *badger.Item) error {
		v, err := item.ValueCopy(nil)
		if err == nil {
			n++
			err = wb.Set(key, v)
		}
		return err
	})
	if err == nil {
		err = wb.Flush()
	}
	if err == nil && n > 0 {
		err = s.rec.Sync()
	}
	if err != nil {
		return fmt.Errorf("badgerstore: move exchange records: %w", err)
	}
	del := s.db.NewWriteBatch()
	defer del.Cancel()
	if n > 0 {
		if err := each(func(key []byte, _ *badger.Item) error { return del.Delete(key) }); err != nil {
			return fmt.Errorf("badgerstore: move exchange records: %w", err)
		}
	}
	if err := del.Set(recordsMovedKey, []byte{1}); err != nil {
		return err
	}
	if err := del.Flush(); err != nil {
		return fmt.Errorf("badgerstore: move exchange records: %w", err)
	}
	if n > 0 && s.logger != nil {
		s.logger.Info("moved exchange records to their own database", "component", "badgerstore", "records", n)
	}
	return nil
}

// isExchangeKey reports whether key is of an exchange record: c \x00
// tenant \x00 conversation \x00 'e' and 8 bytes (ids hold no NUL byte).
func isExchangeKey(key []byte) bool {
	if len(key) < 2 || key[0] != 'c' || key[1] != 0 {
		return false
	}
	parts := bytes.SplitN(key[2:], []byte{0}, 3)
	return len(parts) == 3 && len(parts[2]) == 9 && parts[2][0] == 'e'
}

// recordSyncLoop syncs the records database every interval until Close.
func (s *Store) recordSyncLoop(every time.Duration) {
	defer close(s.recSynced)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.rec.Sync(); err != nil && s.logger != nil {
				s.logger.Warn("background sync of exchange records failed", "component", "badgerstore", "error", err.Error())
			}
		}
	}
}
