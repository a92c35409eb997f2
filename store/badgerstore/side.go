package badgerstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// What is written beside the conversations, not with them, lives in a
// Badger of its own, the side database, in the data directory's side
// subdirectory: the inspector's exchange records (exchanges.go) and the
// search segments (segment.go), under the keys the package comment lists.
// A durable commit syncs the main database's logs, and that sync waited
// for whatever else had been appended to them meanwhile: the records
// (about 700 bytes a request, written between commits) made a commit's
// fsync take 2-8 ms instead of under 1 at the load script's open rate,
// and a fold's segments (a round every ~2 s at that rate) queued the
// commits behind its write and its sync, the open rows' periodic tail.
// The
// side database is never synced by a commit: every sideSyncEvery (with
// relaxed writes, also by the main database's background sync, just
// before the main one), and by an erasure before its pending mark goes.
//
// Nothing spans the two databases in one transaction. What each relies
// on is ordered instead, in this process (one process per directory):
//
//   - Records: appending a batch reads each conversation's metadata and
//     pending mark in the main database and writes the records while
//     holding recMu, and a Delete purges them while holding it, after it
//     set its mark. An append either lands before the purge (which
//     deletes its records) or sees the mark, or the metadata gone, and
//     writes nothing: a conversation that is gone keeps no records. With
//     durable writes an append takes the metadata from the committer's
//     cache when it holds it, and then reads no mark: the committer drops
//     a Delete's conversation from the cache before the Delete's purge
//     begins, and no commit puts it back while the mark is set (each
//     reads the mark, and fails).
//   - Segments: a fold round writes its segments and the side's segment
//     counter, then moves the watermarks and the main counter in the
//     main one (fold.go), without syncing the side between (a machine
//     crash that loses the segments leaves the main counter past the
//     side's, and Open rebuilds the index: writeSegments). Search reads the main
//     database's snapshot first and ignores postings at or past the
//     watermark it read there (its own analysis of the backlog covers
//     those), so a segment whose watermark has not moved, or never will,
//     counts for nothing. A round that fails after its side write deletes
//     its segments; a crash between the two leaves the side counter past
//     the main one, and Open deletes the segments numbered between
//     (dropOrphanSegments). An erasure unposts a record's postings in the
//     side database before it deletes the record in the main one (both
//     idempotent: a crash between is redone by Open's recoverPending) and
//     syncs the side before its mark goes.

// sideDir is the side database's directory, inside the data directory.
const sideDir = "side"

// sideSyncEvery is how often the side database is synced.
const sideSyncEvery = time.Second

// sideKey, in the main database, marks a store whose exchange records and
// search segments are in the side database (earlier versions kept them
// in the main one).
var sideKey = []byte("v\x00side")

// openSide opens (creating if needed) the side database of the store in
// dir. A read-only store whose directory has none (but whose main
// database says its keys moved there) reads an empty one.
func openSide(dir string, o Options, readOnly bool) (*badger.DB, error) {
	path := filepath.Join(dir, sideDir)
	so := badger.DefaultOptions(path).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithCompression(options.None).
		WithBlockCacheSize(0). // plain tables: see blockCacheSize
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(countedDB == "side").
		WithSyncWrites(false).
		WithLogger(slogAdapter{o.Logger})
	if readOnly && !o.InMemory {
		if _, err := os.Stat(filepath.Join(path, badger.ManifestFilename)); err != nil {
			o.InMemory = true
		} else {
			so = so.WithReadOnly(true)
		}
	}
	if o.InMemory {
		// Values stay in memory, the tree's up to Badger's 1 MiB default
		// threshold, which wants a larger memtable.
		so = so.WithInMemory(true).WithDir("").WithValueDir("").WithMemTableSize(16 << 20)
	} else {
		so = so.WithValueThreshold(valueThreshold) // the tree holds keys and pointers (see valueThreshold)
	}
	db, err := badger.Open(so)
	if err != nil {
		return nil, fmt.Errorf("badgerstore: open %s: %w", path, err)
	}
	return db, nil
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

// sideMarked reports whether the main database says its side keys are in
// the side database (sideKey).
func (s *Store) sideMarked() bool {
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(sideKey)
		return err
	})
	return err == nil
}

// moveToSide moves the exchange records and search segments an earlier
// version kept in the main database into the side database, once: copied
// and synced there (with the segment counter), then deleted here with the
// mark set. A crash in between copies them again on the next Open.
func (s *Store) moveToSide() error {
	if s.sideMarked() {
		return nil
	}
	// each calls fn for every key of the main database to move.
	each := func(fn func(key []byte, item *badger.Item) error) error {
		return s.db.View(func(txn *badger.Txn) error {
			for _, p := range [][]byte{{'c', 0}, {'g', 0}, {'i', 0}, {'f', 0}} {
				it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
				for it.Rewind(); it.Valid(); it.Next() {
					if p[0] != 'c' || isExchangeKey(it.Item().Key()) {
						if err := fn(it.Item().KeyCopy(nil), it.Item()); err != nil {
							it.Close()
							return err
						}
					}
				}
				it.Close()
			}
			return nil
		})
	}
	wb := s.side.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	err := each(func(key []byte, item *badger.Item) error {
		v, err := item.ValueCopy(nil)
		if err == nil {
			n++
			err = wb.Set(key, v)
		}
		return err
	})
	if err == nil {
		err = s.readSegmentCounter()
	}
	if err == nil {
		err = s.commitSide(wb)
	}
	if err != nil {
		return fmt.Errorf("badgerstore: move to the side database: %w", err)
	}
	if n > 0 {
		// The segments by prefix: DropPrefix removes them from the tables
		// instead of writing a tombstone each, which the main database's
		// reads would step over until compactions dropped them (the
		// records are deleted one by one: they sit under each
		// conversation's prefix).
		err := s.db.DropPrefix([]byte{'g', 0}, []byte{'i', 0}, []byte{'f', 0})
		if err == nil {
			del := s.db.NewWriteBatch()
			defer del.Cancel()
			err = each(func(key []byte, _ *badger.Item) error { return del.Delete(key) })
			if err == nil {
				err = del.Flush()
			}
		}
		if err != nil {
			return fmt.Errorf("badgerstore: move to the side database: %w", err)
		}
	}
	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Delete([]byte("v\x00records")); err != nil { // an intermediate version's mark
			return err
		}
		return txn.Set(sideKey, []byte{1})
	})
	if err != nil {
		return fmt.Errorf("badgerstore: move to the side database: %w", err)
	}
	if n > 0 && s.logger != nil {
		s.logger.Info("moved exchange records and search segments to the side database", "component", "badgerstore", "keys", n)
	}
	return nil
}

// commitSide sets the side database's segment counter to s.segment in
// wb, flushes wb and syncs the side database.
func (s *Store) commitSide(wb *badger.WriteBatch) error {
	if err := wb.Set(segCounterKey, binary.BigEndian.AppendUint64(nil, s.segment)); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	return s.side.Sync()
}

// sideCounter reads the side database's segment counter: the last
// segment a fold wrote there.
func (s *Store) sideCounter() (uint64, error) {
	var n uint64
	err := readCounter(s.side, &n)
	return n, err
}

// dropOrphanSegments deletes the segments a fold wrote to the side
// database but never committed in the main one (a crash between: the
// side counter is past the main one, s.segment), and brings the side
// counter back. A side counter behind the main one is a machine crash
// that lost segments the main database counts (fold rounds do not sync
// the side database: writeSegments): it sets segmentsLost, and
// buildIndexes rebuilds the search index.
func (s *Store) dropOrphanSegments() error {
	side, err := s.sideCounter()
	if err != nil || side == s.segment {
		return err
	}
	if side < s.segment {
		s.segmentsLost = true
		if s.logger != nil {
			s.logger.Warn("the search index lost segments a machine crash left unsynced; rebuilding it", "component", "badgerstore", "side", side, "main", s.segment)
		}
		return nil
	}
	wb := s.side.NewWriteBatch()
	defer wb.Cancel()
	err = s.side.View(func(txn *badger.Txn) error {
		for _, p := range [][]byte{{'g', 0}, {'i', 0}, {'f', 0}} {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: p})
			for it.Rewind(); it.Valid(); it.Next() {
				key := it.Item().Key()
				if len(key) < 8 {
					continue
				}
				if seg := binary.BigEndian.Uint64(key[len(key)-8:]); seg > s.segment && seg <= side {
					if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
						it.Close()
						return err
					}
				}
			}
			it.Close()
		}
		return nil
	})
	if err == nil {
		err = s.commitSide(wb)
	}
	if err != nil {
		return fmt.Errorf("badgerstore: drop the segments of an unfinished fold: %w", err)
	}
	if s.logger != nil {
		s.logger.Info("dropped the search segments of a fold a crash interrupted", "component", "badgerstore", "from", s.segment+1, "to", side)
	}
	return nil
}

// sideSyncLoop syncs the side database every interval until Close.
func (s *Store) sideSyncLoop(every time.Duration) {
	s.tickUntilClose(every, s.sideSynced, func() {
		if err := s.side.Sync(); err != nil && s.logger != nil {
			s.logger.Warn("background sync of the side database failed", "component", "badgerstore", "error", err.Error())
		}
	})
}
