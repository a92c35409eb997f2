package pgstore_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/store/storetest"
)

func TestCalibrationConformance(t *testing.T) {
	urls := map[history.Store]string{}
	storetest.RunCalibrations(t, func(t *testing.T) history.Store {
		url := pgtest.DB(t)
		s := open(t, url, pgstore.Options{})
		urls[s] = url
		return s
	}, func(t *testing.T, s history.Store) history.Store {
		s.(*pgstore.Store).Close()
		return open(t, urls[s], pgstore.Options{})
	})
}
