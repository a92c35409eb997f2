package badgerstore

import (
	"bytes"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// indexKey records the version of the listing and search indexes the
// database holds; a database written before them has none.
var indexKey = []byte("v\x00index")

// indexVersion 4: a segment's postings name their conversations by
// their place in the segment's table (segment.go); version 3 spelled out
// each group's conversation id and creation time; version 2 indexed the
// fields of chat completions only, and Responses and Anthropic messages
// went unfound; version 1 kept one key per posting. Each version indexes
// every protocol's text as its codec reads it (history.Message.Text)
// from version 3 on.
const indexVersion = 4

// buildIndexes builds the listing and search indexes of a database
// written before them (or before their current version), once, at Open
// (nothing else writes yet): a listing entry per conversation, marked
// dirty with its watermark at the start, so that the fold Open runs next
// indexes every record; a summary written inside the metadata moves to
// its own key. Interrupted, it starts again at the next Open (every write
// is idempotent). It rebuilds the search index of the current version
// too when Open found segments lost (segmentsLost), and then brings the
// side counter up to the main one, last.
func (s *Store) buildIndexes() error {
	var version byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(indexKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) == 1 {
				version = v[0]
			}
			return nil
		})
	})
	if err != nil || (version == indexVersion && !s.segmentsLost) {
		return err
	}
	if version > 0 {
		// Postings and totals of an older layout.
		if err := s.db.DropPrefix([]byte{'i', 0}, []byte{'w', 0}); err != nil {
			return err
		}
		if err := s.side.DropPrefix([]byte{'g', 0}, []byte{'i', 0}, []byte{'f', 0}); err != nil { // moved there by moveToSide, or written there
			return err
		}
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
			tenant, rest, ok := splitTenant(it.Item().Key())
			if !ok {
				continue
			}
			conv, tail, ok := bytes.Cut(rest, []byte{0})
			if !ok || !bytes.Equal(tail, []byte{'m'}) {
				continue
			}
			keys = append(keys, history.Key{Tenant: string(tenant), Conversation: string(conv)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for len(keys) > 0 {
		batch := keys[:min(len(keys), purgeBatch)]
		keys = keys[len(batch):]
		err := s.db.Update(func(txn *badger.Txn) error {
			for _, k := range batch {
				m, ok, err := readMeta(txn, convPrefix(k))
				if err != nil || !ok {
					return err
				}
				if m.Summary != nil {
					// Written with its text inside: the text moves to
					// its own key (see setMeta).
					if err := setMeta(txn, convPrefix(k), &history.Meta{}, &m); err != nil {
						return err
					}
				}
				if err := setTotals(txn, k, totals{}); err != nil {
					return err
				}
				if err := txn.Set(listKey(k, m.UpdatedAt), listDirty); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	err = s.db.Update(func(txn *badger.Txn) error { return txn.Set(indexKey, []byte{indexVersion}) })
	if err != nil || !s.segmentsLost {
		return err
	}
	wb := s.side.NewWriteBatch()
	defer wb.Cancel()
	if err := s.commitSide(wb); err != nil {
		return err
	}
	s.segmentsLost = false
	return nil
}
