package badgerstore

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/history"
)

// AppendExchangeBatch writes several conversations' records in one
// transaction under AppendExchanges' rules: a conversation not stored, or
// stored under another incarnation, gets none.
func TestAppendExchangeBatch(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	a := history.Key{Tenant: "t", Conversation: "a"}
	b := history.Key{Tenant: "t", Conversation: "b"}
	gone := history.Key{Tenant: "t", Conversation: "gone"}
	ma := commitT(t, s, a, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	mb := commitT(t, s, b, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	rec := func(n, inc uint64) history.ExchangeRecord {
		return history.ExchangeRecord{ID: history.NewExchangeID(n), Incarnation: inc}
	}
	batch := []history.KeyedExchanges{
		{Key: a, Records: []history.ExchangeRecord{rec(1, ma.Incarnation), rec(2, ma.Incarnation)}},
		{Key: b, Records: []history.ExchangeRecord{rec(3, mb.Incarnation+1)}}, // an older incarnation's
		{Key: gone, Records: []history.ExchangeRecord{rec(4, 0)}},
		{Key: b, Records: []history.ExchangeRecord{rec(5, mb.Incarnation)}},
	}
	if err := s.AppendExchangeBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    history.Key
		want []string
	}{{a, []string{history.NewExchangeID(2), history.NewExchangeID(1)}}, {b, []string{history.NewExchangeID(5)}}, {gone, nil}} {
		got, err := s.Exchanges(ctx, c.k, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if len(ids) != len(c.want) || (len(ids) > 0 && (ids[0] != c.want[0] || ids[len(ids)-1] != c.want[len(c.want)-1])) {
			t.Errorf("%s: got %v, want %v", c.k, ids, c.want)
		}
	}
	if n := countRecordKeys(t, s, append(convPrefix(gone), 'e')); n != 0 {
		t.Errorf("a conversation never stored has %d record keys, want 0", n)
	}
}
