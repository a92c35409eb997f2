package plan_test

import (
	"testing"

	"github.com/recallproxy/recall/store/badgerstore"
)

// memStore is an in-memory Badger store, closed when tb ends.
func memStore(tb testing.TB) *badgerstore.Store {
	tb.Helper()
	return openBadger(tb, "", badgerstore.Options{InMemory: true})
}

// diskStore is a Badger store in tb's temporary directory, without
// fsync, closed when tb ends.
func diskStore(tb testing.TB) *badgerstore.Store {
	tb.Helper()
	return openBadger(tb, tb.TempDir(), badgerstore.Options{NoSync: true})
}

// openBadger opens a Badger store in dir with o, ending tb if it cannot,
// and closes it when tb ends.
func openBadger(tb testing.TB, dir string, o badgerstore.Options) *badgerstore.Store {
	tb.Helper()
	st, err := badgerstore.Open(dir, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
