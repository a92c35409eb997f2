// Package badgertest opens throwaway Badger stores for the tests of the
// packages that run on one.
package badgertest

import (
	"testing"

	"github.com/recallproxy/recall/store/badgerstore"
)

// Open opens a Badger store in a fresh t.TempDir, without syncing its
// writes (the directory does not outlive the test), and closes it when
// the test and its subtests end.
func Open(t testing.TB) *badgerstore.Store {
	t.Helper()
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
