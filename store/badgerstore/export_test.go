package badgerstore

import "github.com/dgraph-io/badger/v4"

// SideDB exposes the side database to the package's external tests.
func (s *Store) SideDB() *badger.DB { return s.side }

// CountKeys counts the keys of db with prefix (every key for nil), for
// the package's external tests.
var CountKeys = countIn
