package badgerstore_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/storetest"
)

func TestCalibrationConformance(t *testing.T) {
	dirs := map[history.Store]string{}
	openDir := func(t *testing.T, dir string) history.Store {
		s, err := badgerstore.Open(dir, badgerstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		dirs[s] = dir
		return s
	}
	var last history.Store
	storetest.RunCalibrations(t, func(t *testing.T) history.Store {
		last = openDir(t, t.TempDir())
		t.Cleanup(func() { last.(*badgerstore.Store).Close() }) // the store open at the end
		return last
	}, func(t *testing.T, s history.Store) history.Store {
		if err := s.(*badgerstore.Store).Close(); err != nil {
			t.Fatal(err)
		}
		last = openDir(t, dirs[s])
		return last
	})
}
