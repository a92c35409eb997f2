package pgstore_test

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestAppendExchangeBatch: several conversations' records in one
// transaction, one round trip, under AppendExchanges' rules: a
// conversation not stored, or stored under another incarnation, gets
// none, and each keeps its newest history.MaxExchangeRecords.
func TestAppendExchangeBatch(t *testing.T) {
	ctx := testCtx(t)
	rt := &roundTrips{}
	s := open(t, pgtest.DB(t), pgstore.Options{Tracer: rt})
	a := history.Key{Tenant: "t", Conversation: "a"}
	b := history.Key{Tenant: "t", Conversation: "b"}
	gone := history.Key{Tenant: "t", Conversation: "gone"}
	ma := commit(t, s, a, history.Change{Append: turns(0, 1)})
	mb := commit(t, s, b, history.Change{Append: turns(0, 1)})
	rec := func(n, inc uint64) history.ExchangeRecord {
		return history.ExchangeRecord{ID: history.NewExchangeID(n), Incarnation: inc}
	}
	var full []history.ExchangeRecord // more than a conversation keeps
	var wantA []string
	for n := uint64(100); n < 100+history.MaxExchangeRecords+3; n++ {
		full = append(full, rec(n, 0))
		wantA = append(wantA, history.NewExchangeID(n))
	}
	slices.Reverse(wantA)
	wantA = wantA[:history.MaxExchangeRecords]
	batch := []history.KeyedExchanges{
		{Key: a, Records: []history.ExchangeRecord{rec(1, ma.Incarnation), rec(2, ma.Incarnation)}},
		{Key: b, Records: []history.ExchangeRecord{rec(3, mb.Incarnation+1)}}, // another incarnation's
		{Key: gone, Records: []history.ExchangeRecord{rec(4, 0)}},
		{Key: b, Records: []history.ExchangeRecord{rec(5, mb.Incarnation)}},
		{Key: a, Records: full},
	}
	rt.take()
	if err := s.AppendExchangeBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if got := rt.take(); got != 1 {
		t.Errorf("the batch took %d round trips, want 1", got)
	}
	for _, c := range []struct {
		k    history.Key
		want []string
	}{{a, wantA}, {b, []string{history.NewExchangeID(5)}}, {gone, nil}} {
		got, err := s.Exchanges(ctx, c.k, "", 2*history.MaxExchangeRecords)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s: got %v, want %v", c.k, ids, c.want)
		}
	}
}
