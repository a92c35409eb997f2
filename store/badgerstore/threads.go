package badgerstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

var _ history.ThreadLister = (*Store)(nil)

// Threads implements history.ThreadLister: the conversations whose keys
// follow k's own with history.ThreadSep, one seek each (a thread's
// messages are skipped, never read).
func (s *Store) Threads(ctx context.Context, k history.Key) ([]string, error) {
	base := convPrefix(history.Key{Tenant: k.Tenant, Conversation: history.ThreadID(k.Conversation, "")})
	base = base[:len(base)-1] // "c \x00 tenant \x00 conv~": every thread's keys begin so
	var out []string
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: base})
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			name, _, ok := bytes.Cut(key[len(base):], []byte{0})
			if !ok {
				it.Next()
				continue
			}
			id := history.ThreadID(k.Conversation, string(name))
			prefix := convPrefix(history.Key{Tenant: k.Tenant, Conversation: id})
			if _, stored, err := readMetaHead(txn, prefix); err != nil {
				return err
			} else if stored {
				out = append(out, id)
			}
			prefix[len(prefix)-1] = 1 // past every key of this thread
			it.Seek(prefix)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: list threads of %s: %w", k, err)
	}
	return out, nil
}
