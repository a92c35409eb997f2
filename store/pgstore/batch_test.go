package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// held is a Store with one committer whose first batch waits until the
// test releases it, so that the commits made meanwhile queue up and go
// in the next batch together.
type held struct {
	*pgstore.Store
	first    chan struct{} // closed when the first batch is about to be sent
	queued   chan int      // the queue's length after each commit joined it
	release  chan struct{} // close to let the first batch go
	mu       sync.Mutex
	batches  []int // each batch's size, in the order they were sent
	rt       *roundTrips
	onceSent sync.Once
}

func openHeld(t *testing.T) *held {
	t.Helper()
	rt := &roundTrips{}
	h := &held{Store: open(t, pgtest.DB(t), pgstore.Options{Committers: 1, Tracer: rt}), rt: rt, first: make(chan struct{}),
		queued: make(chan int, 1024), release: make(chan struct{})}
	pgstore.BatchHooks(h.Store, func(n int) { h.queued <- n }, func(n int) {
		h.mu.Lock()
		h.batches = append(h.batches, n)
		h.mu.Unlock()
		h.onceSent.Do(func() {
			for len(h.queued) > 0 { // the first commit's own: it is not behind the batch
				<-h.queued
			}
			close(h.first)
			<-h.release
		})
	})
	return h
}

// waitQueued waits until n commits are queued behind the first batch.
func (h *held) waitQueued(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case got := <-h.queued:
			if got >= n {
				return
			}
		case <-deadline:
			t.Fatalf("%d commits never queued", n)
		}
	}
}

func (h *held) sizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.batches...)
}

// create commits a conversation's first turn (not batched: it creates the
// row) and returns its metadata.
func create(t *testing.T, s *pgstore.Store, k history.Key) history.Meta {
	t.Helper()
	m, err := s.Commit(testCtx(t), k, history.Change{Append: turns(0, 1), Now: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// plain is a plain turn on m, as the chat path commits it.
func plain(m history.Meta, turn int) history.Change {
	return history.Change{Version: m.Version, Base: &m, Append: turns(turn, 1), Now: int64(turn+1) * 1e9}
}

// TestConcurrentCommitsShareAStatement: plain commits to different
// conversations queued while a committer is busy go in its next batch,
// one statement, and each lands as it would alone.
func TestConcurrentCommitsShareAStatement(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	const n = 8
	metas := make([]history.Meta, n)
	for i := range n {
		metas[i] = create(t, h.Store, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)})
	}
	h.rt.take()
	errs := make([]error, n)
	got := make([]history.Meta, n)
	var wg sync.WaitGroup
	commit := func(i int) {
		defer wg.Done()
		got[i], errs[i] = h.Commit(ctx, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}, plain(metas[i], 1))
	}
	wg.Add(n)
	go commit(0)
	<-h.first
	for i := 1; i < n; i++ {
		go commit(i)
	}
	h.waitQueued(t, n-1)
	close(h.release)
	wg.Wait()
	if want := []int{1, n - 1}; !reflect.DeepEqual(h.sizes(), want) {
		t.Errorf("batches of %v, want %v", h.sizes(), want)
	}
	if got := h.rt.take(); got != 2 {
		t.Errorf("%d commits took %d round trips, want 2 (the first alone, the others in one statement)", n, got)
	}
	for i := range n {
		k := history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}
		if errs[i] != nil {
			t.Fatalf("%s: %v", k, errs[i])
		}
		snap, err := h.Load(ctx, k, history.Query{MinMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Meta.Version != metas[i].Version+1 || got[i].Version != snap.Meta.Version || len(snap.Tail) != 4 ||
			string(snap.Tail[3].Raw) != string(turns(1, 1)[1].Raw) {
			t.Errorf("%s: stored version %d with %d messages, commit answered %d; want %d with 4",
				k, snap.Meta.Version, len(snap.Tail), got[i].Version, metas[i].Version+1)
		}
	}
}

// TestBatchedCommitOnAMovedHead: in a batch, a commit whose conversation
// moved since its base is not written and decides against the stored
// head (a conflict); a batch never holds two commits of one
// conversation; the others in the batch land.
func TestBatchedCommitOnAMovedHead(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	ka, kb, kc := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}, history.Key{Tenant: "t", Conversation: "c"}
	ma, mb, mc := create(t, h.Store, ka), create(t, h.Store, kb), create(t, h.Store, kc)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); _, _ = h.Commit(ctx, kc, plain(mc, 1)) }() // the first batch, held
	<-h.first
	var errA, errB1, errB2 error
	go func() { defer wg.Done(); _, errA = h.Commit(ctx, ka, plain(ma, 1)) }()
	go func() { defer wg.Done(); _, errB1 = h.Commit(ctx, kb, plain(mb, 1)) }()
	go func() { defer wg.Done(); _, errB2 = h.Commit(ctx, kb, plain(mb, 2)) }() // the same base: one of the two wins
	h.waitQueued(t, 3)
	close(h.release)
	wg.Wait()
	if want := []int{1, 2, 1}; !reflect.DeepEqual(h.sizes(), want) {
		t.Errorf("batches of %v, want %v (b's second commit alone, after)", h.sizes(), want)
	}
	if errA != nil {
		t.Fatalf("a: %v", errA)
	}
	if (errB1 == nil) == (errB2 == nil) || !errors.Is(errors.Join(errB1, errB2), history.ErrConflict) {
		t.Fatalf("b's two commits on one base: %v, %v; want one to land and the other to conflict", errB1, errB2)
	}
	for k, want := range map[history.Key]int{ka: 4, kb: 4, kc: 4} {
		snap, err := h.Load(ctx, k, history.Query{MinMessages: 100})
		if err != nil || len(snap.Tail) != want || snap.Meta.Version != ma.Version+1 {
			t.Errorf("%s: %d messages at version %d (%v), want %d at %d", k, len(snap.Tail), snap.Meta.Version, err, want, ma.Version+1)
		}
	}
}

// TestBatchTheServerRefuses: a commit the server refuses (here a base
// that lies about the stored messages: its records collide with stored
// ones) fails the batch's statement, which writes nothing; each commit of
// the batch is then tried alone, and only that one fails.
func TestBatchTheServerRefuses(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	ka, kb, kc := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}, history.Key{Tenant: "t", Conversation: "c"}
	ma, mb, mc := create(t, h.Store, ka), create(t, h.Store, kb), create(t, h.Store, kc)
	liar := mb
	liar.NextSeq, liar.Messages = 1, 0 // the stored head, but its messages' numbers start over
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _, _ = h.Commit(ctx, kc, plain(mc, 1)) }()
	<-h.first
	var errA, errB error
	go func() { defer wg.Done(); _, errA = h.Commit(ctx, ka, plain(ma, 1)) }()
	go func() { defer wg.Done(); _, errB = h.Commit(ctx, kb, plain(liar, 1)) }()
	h.waitQueued(t, 2)
	close(h.release)
	wg.Wait()
	if want := []int{1, 2}; !reflect.DeepEqual(h.sizes(), want) {
		t.Errorf("batches of %v, want %v", h.sizes(), want)
	}
	if errA != nil {
		t.Errorf("a, in the refused batch with b: %v; want it landed alone", errA)
	}
	if errB == nil {
		t.Errorf("b's colliding commit landed")
	}
	for k, want := range map[history.Key]int{ka: 4, kb: 2} {
		snap, err := h.Load(ctx, k, history.Query{MinMessages: 100})
		if err != nil || len(snap.Tail) != want {
			t.Errorf("%s: %d messages (%v), want %d", k, len(snap.Tail), err, want)
		}
	}
}

// TestQueuedCommitWithdrawn: a commit whose context ends while it waits
// for a committer is withdrawn, nothing written.
func TestQueuedCommitWithdrawn(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	ka, kb := history.Key{Tenant: "t", Conversation: "a"}, history.Key{Tenant: "t", Conversation: "b"}
	ma, mb := create(t, h.Store, ka), create(t, h.Store, kb)
	done := make(chan error, 1)
	go func() { _, err := h.Commit(ctx, ka, plain(ma, 1)); done <- err }()
	<-h.first
	cctx, cancel := context.WithCancel(ctx)
	errB := make(chan error, 1)
	go func() { _, err := h.Commit(cctx, kb, plain(mb, 1)); errB <- err }()
	h.waitQueued(t, 1)
	cancel()
	if err := <-errB; !errors.Is(err, context.Canceled) {
		t.Errorf("the withdrawn commit: %v, want context.Canceled", err)
	}
	close(h.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := h.sizes(); !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("batches of %v, want [1]: the withdrawn commit was sent", got)
	}
	snap, err := h.Load(ctx, kb, history.Query{MinMessages: 100})
	if err != nil || len(snap.Tail) != 2 || snap.Meta.Version != mb.Version {
		t.Errorf("b: %d messages at version %d (%v), want 2 at %d", len(snap.Tail), snap.Meta.Version, err, mb.Version)
	}
}

// TestBatchesAreOneTenants: a batch holds one tenant's commits (one
// shard on Citus); another tenant's queued beside them go in a batch of
// their own.
func TestBatchesAreOneTenants(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	keys := []history.Key{{Tenant: "t1", Conversation: "a"}, {Tenant: "t2", Conversation: "a"}, {Tenant: "t1", Conversation: "b"}}
	first := history.Key{Tenant: "t1", Conversation: "first"}
	metas := map[history.Key]history.Meta{first: create(t, h.Store, first)}
	for _, k := range keys {
		metas[k] = create(t, h.Store, k)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(keys))
	wg.Add(1 + len(keys))
	go func() { defer wg.Done(); _, _ = h.Commit(ctx, first, plain(metas[first], 1)) }()
	<-h.first
	for i, k := range keys {
		go func() { defer wg.Done(); _, errs[i] = h.Commit(ctx, k, plain(metas[k], 1)) }()
		h.waitQueued(t, i+1) // in this order
	}
	close(h.release)
	wg.Wait()
	if want := []int{1, 2, 1}; !reflect.DeepEqual(h.sizes(), want) {
		t.Errorf("batches of %v, want %v (t1's two, then t2's)", h.sizes(), want)
	}
	for i, k := range keys {
		snap, err := h.Load(ctx, k, history.Query{MinMessages: 100})
		if errs[i] != nil || err != nil || len(snap.Tail) != 4 {
			t.Errorf("%s: commit %v; %d messages (%v), want 4", k, errs[i], len(snap.Tail), err)
		}
	}
}

// TestBatchStatementReadsOnlyItsRows: the batched commit's plan reaches
// the conversations' rows only through their keys (the primary key, then
// the row id), even when the statistics think the tenant holds a handful
// of rows. A condition on the tenant beside the row id was once planned
// as a scan of all of the tenant's rows through another index, every batch (0.6 ms of the
// server a request in the load script).
func TestBatchStatementReadsOnlyItsRows(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	pool := s.Pool()
	if _, err := pool.Exec(ctx, `ALTER TABLE recall_conversations SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	// The statistics see another tenant's many rows and three of t's.
	if _, err := pool.Exec(ctx, `INSERT INTO recall_conversations (tenant, conversation, version, summaries, updated_at, meta)
		SELECT 'other', 'c' || i, 1, 0, i, '\xff'::bytea FROM generate_series(0, 19999) i`); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		create(t, s, history.Key{Tenant: "t", Conversation: fmt.Sprint("seen", i)})
	}
	if _, err := pool.Exec(ctx, `ANALYZE recall_conversations`); err != nil {
		t.Fatal(err)
	}
	// t's rows the statistics have not seen.
	if _, err := pool.Exec(ctx, `INSERT INTO recall_conversations (tenant, conversation, version, summaries, updated_at, meta)
		SELECT 't', 'c' || i, 1, 0, i, '\xff'::bytea FROM generate_series(0, 19999) i`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const n = 32 // a batch of n conversations
	convs, ones, zeros, zeros32, metas := make([]string, n), make([]int64, n), make([]int64, n), make([]int32, n), make([][]byte, n)
	for i := range n {
		convs[i], ones[i], metas[i] = fmt.Sprint("c", i), 1, []byte{0xff}
	}
	args := []any{"t", convs, ones, zeros32, ones, ones, metas, zeros, zeros, ones, zeros32, ones,
		[]string{}, []int64{}, []int32{}, []int64{}, [][]byte{}, []string{}}
	names, holders := make([]string, n), make([]string, n)
	for i := range n {
		names[i], holders[i] = "conv/t/"+convs[i], "holder"
	}
	for _, tc := range []struct {
		mode, sql string
		args      []any
	}{
		{"force_custom_plan", pgstore.BatchSQL, args},
		{"force_generic_plan", pgstore.BatchSQL, args},
		{"force_custom_plan, leased", pgstore.BatchLeasedSQL, append(args, names, holders)},
		{"force_generic_plan, leased", pgstore.BatchLeasedSQL, append(args, names, holders)},
	} {
		mode, _, _ := strings.Cut(tc.mode, ",")
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN "+tc.sql, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		for _, bad := range []string{"Seq Scan on recall_conversations", "Bitmap Heap Scan on recall_conversations", "recall_conversations_activity"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: the plan has %q:\n%s", tc.mode, bad, text)
			}
		}
		if !strings.Contains(text, "Tid Scan on recall_conversations") {
			t.Errorf("%s: the plan updates no row by its id:\n%s", tc.mode, text)
		}
	}
}

// TestBatchesArePlannedOnce: the batched commit runs on connections that
// plan it once, generically. With the server's default, a prepared
// statement is planned anew at each of its first five runs on a
// connection, and the leased batch went on being planned at most runs
// in the load script's recall-pg-2 row (1.4 ms of the server each).
func TestBatchesArePlannedOnce(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	const convs, rounds = 4, 8
	metas := make([]history.Meta, convs)
	for i := range convs {
		metas[i] = create(t, s, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)})
	}
	for turn := 1; turn <= rounds; turn++ {
		for i := range convs {
			m, err := s.Commit(ctx, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}, plain(metas[i], turn))
			if err != nil {
				t.Fatal(err)
			}
			metas[i] = m
		}
	}
	conns := pgstore.BatchPool(s).AcquireAllIdle(ctx)
	var custom, generic, runs int64
	for _, c := range conns {
		var cu, ge int64
		err := c.QueryRow(ctx, `SELECT coalesce(sum(custom_plans), 0)::bigint, coalesce(sum(generic_plans), 0)::bigint
			FROM pg_prepared_statements WHERE statement = ANY($1)`, []string{pgstore.BatchSQL, pgstore.BatchLeasedSQL}).Scan(&cu, &ge)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
		custom, generic = custom+cu, generic+ge
	}
	runs = custom + generic
	if runs < convs*rounds {
		t.Fatalf("the batch pool's connections ran %d batches, want the %d commits' (%d connections idle)", runs, convs*rounds, len(conns))
	}
	if custom != 0 {
		t.Errorf("%d of %d batches were planned for their values (custom plans), want none", custom, runs)
	}
}
