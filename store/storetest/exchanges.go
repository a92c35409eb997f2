package storetest

import (
	"reflect"
	"testing"

	"github.com/recallproxy/recall/history"
)

// record returns exchange record number n of a conversation.
func record(n uint64, inc uint64) history.ExchangeRecord {
	return history.ExchangeRecord{ID: history.NewExchangeID(n), Object: "conversation.exchange", CreatedAt: int64(n),
		Kind: "chat", Ingress: "chat.completions", Upstream: "chat.completions", Model: "m", Status: "answered", HTTPStatus: 200,
		Included: []history.Span{{From: 3, To: 4}}, Dropped: []history.Dropped{{From: 1, To: 2, Reason: history.DroppedBudget, Turns: 1}},
		Cut: []history.CutResult{{Seq: 3, CharsBefore: 100, CharsAfter: 10}}, Committed: []history.Span{{From: 5, To: 6}},
		Summary: &history.SummaryUse{Through: 2, Tokens: 7}, Calibration: 1.25,
		Tokens:      history.ExchangeTokens{History: 20, EstimatedInput: 40, CalibratedInput: 50, ReportedInput: 30},
		Incarnation: inc}
}

func records(from, to uint64, inc uint64) []history.ExchangeRecord {
	var out []history.ExchangeRecord
	for n := from; n <= to; n++ {
		out = append(out, record(n, inc))
	}
	return out
}

func exchangeIDs(recs []history.ExchangeRecord) []string {
	return each(recs, func(r history.ExchangeRecord) string { return r.ID })
}

func xids(ns ...uint64) []string { return each(ns, history.NewExchangeID) }

func mustExchanges(t *testing.T, s history.Store, k history.Key, before string, limit int) []history.ExchangeRecord {
	t.Helper()
	recs, err := s.Exchanges(ctx, k, before, limit)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// Records come back whole, newest first, paged by the id of the last one
// of the previous page.
func testExchangesOrderAndPaging(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := MustCommit(t, s, k, history.Change{Append: Turns(1, 2)})
	// Two appends, the second with an id between the first's: order is by
	// id, not by append.
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{record(10, m.Incarnation), record(30, m.Incarnation)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{record(20, 0), record(40, m.Incarnation)}); err != nil {
		t.Fatal(err)
	}
	all := mustExchanges(t, s, k, "", 10)
	if got, want := exchangeIDs(all), xids(40, 30, 20, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	want := record(40, 0) // the incarnation is not kept in the record
	if !reflect.DeepEqual(all[0], want) {
		t.Errorf("record read back:\ngot  %+v\nwant %+v", all[0], want)
	}
	var pages [][]string
	for before := ""; ; {
		page := mustExchanges(t, s, k, before, 3)
		if len(page) == 0 {
			break
		}
		pages = append(pages, exchangeIDs(page))
		before = page[len(page)-1].ID
	}
	if want := [][]string{xids(40, 30, 20), xids(10)}; !reflect.DeepEqual(pages, want) {
		t.Errorf("pages of 3: got %v, want %v", pages, want)
	}
	if got := mustExchanges(t, s, history.Key{Tenant: "other", Conversation: "c"}, "", 10); len(got) != 0 {
		t.Errorf("another tenant's conversation of the same id has records %v, want none", exchangeIDs(got))
	}
}

// Only the newest history.MaxExchangeRecords are kept.
func testExchangesCap(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 1)})
	max := uint64(history.MaxExchangeRecords)
	if err := s.AppendExchanges(ctx, k, records(1, max-10, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendExchanges(ctx, k, records(max-9, max+15, 0)); err != nil {
		t.Fatal(err)
	}
	all := mustExchanges(t, s, k, "", 1000)
	if len(all) != int(max) {
		t.Fatalf("got %d records, want %d", len(all), max)
	}
	if got, want := []string{all[0].ID, all[len(all)-1].ID}, xids(max+15, 16); !reflect.DeepEqual(got, want) {
		t.Errorf("newest and oldest kept: got %v, want %v", got, want)
	}
}

// Single appends trim only now and then (history.TrimDue), and a store
// may hold a few records past the cap between trims: Exchanges lists the
// newest history.MaxExchangeRecords all the same, paged or not.
func testExchangesCapBetweenTrims(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 1)})
	max := history.MaxExchangeRecords
	var ids []uint64
	for n := uint64(1); len(ids) < max+20; n++ {
		r := record(n, 0)
		if history.TrimDue([]history.ExchangeRecord{r}) {
			continue
		}
		ids = append(ids, n)
		if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{r}); err != nil {
			t.Fatal(err)
		}
	}
	all := mustExchanges(t, s, k, "", 1000)
	if len(all) != max {
		t.Fatalf("got %d records, want the newest %d", len(all), max)
	}
	if got, want := []string{all[0].ID, all[max-1].ID}, xids(ids[len(ids)-1], ids[20]); !reflect.DeepEqual(got, want) {
		t.Errorf("newest and oldest listed: got %v, want %v", got, want)
	}
	if got := mustExchanges(t, s, k, all[max-3].ID, 10); len(got) != 2 || got[0].ID != all[max-2].ID {
		t.Errorf("the last page: got %v, want the 2 oldest listed", exchangeIDs(got))
	}
}

// Records go with their conversation, never outlive it, and never attach
// to a conversation made again under its id.
func testExchangesErased(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	old := MustCommit(t, s, k, history.Change{Append: Turns(1, 1)})
	if err := s.AppendExchanges(ctx, k, records(1, 3, old.Incarnation)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if got := mustExchanges(t, s, k, "", 10); len(got) != 0 {
		t.Fatalf("after the delete: records %v, want none", exchangeIDs(got))
	}
	// A late record of the deleted conversation is dropped.
	if err := s.AppendExchanges(ctx, k, records(4, 4, old.Incarnation)); err != nil {
		t.Fatal(err)
	}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 1)})
	if got := mustExchanges(t, s, k, "", 10); len(got) != 0 {
		t.Errorf("the conversation made again under the id has records %v, want none", exchangeIDs(got))
	}
	if err := s.AppendExchanges(ctx, k, records(5, 5, old.Incarnation)); err != nil {
		t.Fatal(err)
	}
	if got := mustExchanges(t, s, k, "", 10); len(got) != 0 {
		t.Errorf("a record of the old incarnation was kept: %v, want none", exchangeIDs(got))
	}
	// A conversation never stored keeps no records.
	never := history.Key{Tenant: "t", Conversation: "never"}
	if err := s.AppendExchanges(ctx, never, records(1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if got := mustExchanges(t, s, never, "", 10); len(got) != 0 {
		t.Errorf("a conversation never stored has records %v, want none", exchangeIDs(got))
	}
}
