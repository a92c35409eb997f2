package badgerstore

import "github.com/dgraph-io/badger/v4"

// SideDB exposes the side database to the package's external tests.
func (s *Store) SideDB() *badger.DB { return s.side }
