package pgstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestAppendExchangeBatch: several conversations' records in one
// transaction, one round trip, one insert statement, under
// AppendExchanges' rules: a
// conversation not stored, or stored under another incarnation, gets
// none, and each keeps its newest history.MaxExchangeRecords.
func TestAppendExchangeBatch(t *testing.T) {
	ctx := testCtx(t)
	s, rt := openCounted(t)
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
	if got := rt.batchedLike("INSERT INTO recall_exchanges"); got != 1 {
		t.Errorf("the batch sent %d insert statements, want 1 for its three conversations", got)
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

// A single record's append trims the conversation's records only when
// history.TrimDue says so (the trim's DELETE cost the database more than
// the insert); between trims the table holds a few past the cap.
func TestSingleAppendsTrimNowAndThen(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commit(t, s, k, history.Change{Append: turns(0, 1)})
	conn := connect(t, url)
	rows := func() (n int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM recall_exchanges WHERE tenant = 't' AND conversation = 'c'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	max := history.MaxExchangeRecords
	appended := 0
	for n := uint64(1); appended < max+20; n++ {
		r := history.ExchangeRecord{ID: history.NewExchangeID(n), Incarnation: m.Incarnation}
		if history.TrimDue([]history.ExchangeRecord{r}) {
			continue
		}
		if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{r}); err != nil {
			t.Fatal(err)
		}
		appended++
	}
	if got := rows(); got != max+20 {
		t.Fatalf("after %d untrimmed appends: %d rows, want %d", appended, got, max+20)
	}
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1 << 40), Incarnation: m.Incarnation}}); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got != max {
		t.Errorf("after a trimming append: %d rows, want %d", got, max)
	}
}

// An exchange record is written while a commit holds its conversation's
// row (the row updated, the transaction open), and does not wait for it:
// the records' lock on the row (FOR KEY SHARE) guards it against a
// Delete, not against a commit, which changes neither its key nor its
// incarnation.
func TestExchangeRecordsDoNotWaitForACommit(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "busy"}
	m := commit(t, s, k, history.Change{Append: turns(0, 1)})
	conn := connect(t, url)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE recall_conversations SET updated_at = updated_at + 1 WHERE tenant = $1 AND conversation = $2`,
		k.Tenant, k.Conversation); err != nil {
		t.Fatal(err)
	}
	// With the commit's transaction open, the appends either finish or
	// wait for it until this deadline.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.AppendExchanges(short, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1), Incarnation: m.Incarnation}}); err != nil {
		t.Fatalf("a single append: %v", err)
	}
	batch := []history.KeyedExchanges{{Key: k, Records: []history.ExchangeRecord{{ID: history.NewExchangeID(2), Incarnation: m.Incarnation}}}}
	if err := s.AppendExchangeBatch(short, batch); err != nil {
		t.Fatalf("a batch: %v", err)
	}
	got, err := s.Exchanges(ctx, k, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("%d records stored, want 2", len(got))
	}
}
