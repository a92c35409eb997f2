package badgerstore

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/history"
)

// Single records are appended without iterating the conversation's record
// keys most of the time (history.TrimDue); the store may then hold a few past the
// cap, but Exchanges lists the newest MaxExchangeRecords only, paged or
// not, and the next trim brings the keys back to the cap.
func TestExchangesTrimAmortised(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "hello"), textMsg("assistant", "hi")}})
	max := history.MaxExchangeRecords
	var ids []string
	for n := uint64(1); len(ids) < max+20; n++ {
		id := history.NewExchangeID(n)
		if history.TrimDueIDs([]string{id}) {
			continue // a trimming append: kept for the end
		}
		ids = append(ids, id)
		if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: id, Incarnation: m.Incarnation}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := countRecordKeys(t, s, append(convPrefix(k), 'e')); got != max+20 {
		t.Fatalf("untrimmed: %d record keys, want %d", got, max+20)
	}
	all, err := s.Exchanges(ctx, k, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != max || all[0].ID != ids[len(ids)-1] || all[max-1].ID != ids[20] {
		t.Fatalf("listed %d records from %s to %s, want the newest %d: %s to %s",
			len(all), all[0].ID, all[len(all)-1].ID, max, ids[len(ids)-1], ids[20])
	}
	page, err := s.Exchanges(ctx, k, all[max-3].ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].ID != all[max-2].ID {
		t.Errorf("the last page: got %d records, want the 2 oldest listed", len(page))
	}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1 << 40), Incarnation: m.Incarnation}}); err != nil {
		t.Fatal(err)
	}
	if got := countRecordKeys(t, s, append(convPrefix(k), 'e')); got != max {
		t.Errorf("after a trimming append: %d record keys, want %d", got, max)
	}
}
