package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// List reads a page of the tenant's listing index, newest activity first
// (or oldest first), and each entry's metadata: the cost follows the page
// (plus q.Skip index keys, and the entries Keep drops), not the number of
// conversations. more is true when the index holds entries past the page
// (with Keep, the next page may come back empty).
//
// A page after q.After starts where that conversation is listed now: if
// it was written since the previous page, that is at the front, and the
// next page repeats conversations rather than skipping any.
func (s *Store) List(ctx context.Context, tenant string, q history.ListQuery) ([]history.Entry, bool, error) {
	if q.Limit <= 0 {
		return nil, false, fmt.Errorf("badgerstore: list %s: limit %d, want > 0", tenant, q.Limit)
	}
	var page []history.Entry
	more := false
	prefix := listPrefix(tenant)
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = prefix
		opts.PrefetchValues = false
		opts.Reverse = q.Oldest
		it := txn.NewIterator(opts)
		defer it.Close()

		// Where the page starts: the first entry, the one after q.After,
		// or the newest entry updated before q.UpdatedBefore.
		var seek, after []byte
		switch {
		case q.Oldest:
			// Past every entry: ^updated(8) then an id, whose bytes are
			// all below 0xff.
			seek = append(bytes.Clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		case q.UpdatedBefore > 0:
			seek = binary.BigEndian.AppendUint64(bytes.Clone(prefix), ^uint64(q.UpdatedBefore-1))
		default:
			seek = prefix
		}
		if q.After != "" {
			k := history.Key{Tenant: tenant, Conversation: q.After}
			m, ok, err := readMetaHead(txn, convPrefix(k)) // its listing entry: not its summary's text
			if err != nil {
				return err
			}
			if ok {
				after = listKey(k, m.UpdatedAt)
				if q.Oldest == (bytes.Compare(after, seek) < 0) {
					seek = after
				}
			}
		}
		skip := q.Skip
		for it.Seek(seek); it.Valid(); it.Next() {
			key := it.Item().Key()
			if after != nil && bytes.Equal(key, after) {
				continue
			}
			updated, conv := parseListKey(prefix, key)
			if q.UpdatedBefore > 0 && updated >= q.UpdatedBefore {
				if q.Oldest {
					break // newer from here on
				}
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			if len(page) == q.Limit {
				more = true
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			k := history.Key{Tenant: tenant, Conversation: string(conv)}
			m, ok, err := readMeta(txn, convPrefix(k))
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("listing entry without metadata")
			}
			if q.Keep != nil && !q.Keep(&m) {
				continue
			}
			page = append(page, history.Entry{Conversation: k.Conversation, Meta: m})
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("badgerstore: list %s: %w", tenant, err)
	}
	return page, more, nil
}

// Namespaces walks the listing index's tenants: one seek per namespace
// returned, past the rest of its entries (ids hold no NUL byte, so
// tenant+"\x01" sorts after every key of tenant and before any longer id).
func (s *Store) Namespaces(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("badgerstore: namespaces: limit %d, want > 0", limit)
	}
	var out []string
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = append([]byte{'l', 0}, prefix...)
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		seek := opts.Prefix
		if after >= prefix && after != "" {
			seek = append(append([]byte{'l', 0}, after...), 1)
		}
		for it.Seek(seek); it.Valid() && len(out) < limit; it.Seek(seek) {
			if err := ctx.Err(); err != nil {
				return err
			}
			rest := it.Item().Key()[2:]
			i := bytes.IndexByte(rest, 0)
			if i < 0 {
				return fmt.Errorf("badgerstore: namespaces: malformed listing key %q", it.Item().Key())
			}
			out = append(out, string(rest[:i]))
			seek = append(append([]byte{'l', 0}, rest[:i]...), 1)
		}
		return nil
	})
	return out, err
}
