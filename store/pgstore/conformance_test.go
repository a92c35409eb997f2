package pgstore_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/store/storetest"
)

// TestConformance runs the store conformance suite, each case on a fresh
// database; FirstBatch 2 makes every long read go on past the first
// statement.
func TestConformance(t *testing.T) {
	for _, batch := range []int{0, 2} {
		name := "default"
		if batch > 0 {
			name = "small-batches"
		}
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) history.Store {
				return open(t, pgtest.DB(t), pgstore.Options{FirstBatch: batch})
			})
		})
	}
}
