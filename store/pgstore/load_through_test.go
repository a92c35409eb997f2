package pgstore_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// rowCounter counts the rows the database sent for the statements whose
// SQL starts with one of prefixes, by their command tags (the rows a
// result held, whether the reader took them or its close drained them),
// sent alone or in a batch.
type rowCounter struct {
	prefixes []string
	mu       sync.Mutex
	n        int64
}

func (r *rowCounter) add(sql string, tag int64) {
	for _, p := range r.prefixes {
		if strings.HasPrefix(sql, p) {
			r.mu.Lock()
			r.n += tag
			r.mu.Unlock()
			return
		}
	}
}

type sqlKey struct{}

func (r *rowCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}
func (r *rowCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	r.add(sql, d.CommandTag.RowsAffected())
}
func (r *rowCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (r *rowCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL, d.CommandTag.RowsAffected())
}
func (r *rowCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns the rows counted since the last take.
func (r *rowCounter) take() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = 0
	return n
}

// TestLoadStartsAtTheSummary: a load that stops at the summary
// (Query.Summarized) of a conversation not cached (a replica's first
// request on it) reads the turns after the summary, not the newest first
// batch of the whole conversation: 50 turns summarised through the 47th
// send 7 rows (the metadata and 6 messages), not 101. A through column
// past the summary the metadata holds (a replica of an earlier build
// changed the summary without writing it), or at 0 (a row of an earlier
// build), still gives the same tail.
func TestLoadStartsAtTheSummary(t *testing.T) {
	ctx := testCtx(t)
	rows := &rowCounter{prefixes: []string{"WITH c AS", "WITH l AS", "SELECT 0::bigint, meta, summary"}} // Load's first statement
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rows})
	k := history.Key{Tenant: "t", Conversation: "summarised"}
	m := commit(t, s, k, history.Change{Append: turns(0, 50)})
	if _, err := s.Commit(ctx, k, history.Change{Version: m.Version, Base: &m, Now: 9e9,
		Summary: &history.SummaryChange{Incarnation: m.Incarnation, Summary: history.Summary{Text: "s", Through: 94, Turns: 47}}}); err != nil {
		t.Fatal(err)
	}
	q := history.Query{MinMessages: 1, Tokens: 1 << 20, FromCut: true, Summarized: true}
	want := []uint64{95, 96, 97, 98, 99, 100}
	load := func(what string, wantRows int64, lease bool) {
		t.Helper()
		q := q
		var l history.ExchangeLease
		if lease {
			q.Lease = &l
		}
		rows.take()
		snap, err := s.Load(ctx, k, q)
		if err != nil {
			t.Fatal(err)
		}
		if l.Held() {
			l.Hold().Release()
		}
		if got := seqsOf(snap.Tail); !slices.Equal(got, want) || snap.Meta.Summary == nil || snap.Meta.Summary.Through != 94 {
			t.Errorf("%s: got messages %v, summary %+v; want %v after the summary through 94", what, got, snap.Meta.Summary, want)
		}
		if n := rows.take(); wantRows >= 0 && n != wantRows {
			t.Errorf("%s: the load's statement sent %d rows, want %d", what, n, wantRows)
		}
	}
	load("summarised", 7, false)
	// The exchange's lease taken with the read (a second replica is
	// open: the lease is in the table): the same statement, leased, and
	// a row more, the take's.
	open(t, url, pgstore.Options{})
	load("summarised, leased", 8, true)

	setThrough := func(v int) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE recall_conversations SET through = $1 WHERE tenant = $2 AND conversation = $3`, v, k.Tenant, k.Conversation); err != nil {
			t.Fatal(err)
		}
	}
	setThrough(98)
	load("a through column past the summary", -1, false)
	setThrough(0)
	load("a through column of an earlier build", 101, false)

	// Without Summarized the column does not bound the read.
	rows.take()
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 1, Tokens: 1 << 20})
	if err != nil || len(snap.Tail) != 100 {
		t.Fatalf("not summarised: %d messages (%v), want 100", len(snap.Tail), err)
	}
}

// TestLoadScansFromTheSummary: the summarised load's index scan of the
// messages starts after the summary (its bound is an index condition),
// rather than walking the whole conversation newest first and filtering
// the rows out: the scan returns the 6 messages after the summary of 100.
func TestLoadScansFromTheSummary(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "scan"}
	m := commit(t, s, k, history.Change{Append: turns(0, 50)})
	if _, err := s.Commit(ctx, k, history.Change{Version: m.Version, Base: &m, Now: 9e9,
		Summary: &history.SummaryChange{Incarnation: m.Incarnation, Summary: history.Summary{Text: "s", Through: 94, Turns: 47}}}); err != nil {
		t.Fatal(err)
	}
	var plan []byte
	if err := s.Pool().QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+pgstore.LoadSQL, k.Tenant, k.Conversation, int64(0), 128, true).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var scanned []float64 // the rows each scan of recall_messages returned
	var walk func(n gjson.Result)
	walk = func(n gjson.Result) {
		if n.Get("Relation Name").Str == "recall_messages" {
			scanned = append(scanned, n.Get("Actual Rows").Float())
		}
		for _, c := range n.Get("Plans").Array() {
			walk(c)
		}
	}
	walk(gjson.GetBytes(plan, "0.Plan"))
	if len(scanned) != 1 || scanned[0] != 6 {
		t.Errorf("the scans of recall_messages returned %v rows, want one of 6 (the messages after the summary)\n%s", scanned, plan)
	}
}
