package pgstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A commit adds its messages' search entries to the GIN index's pending
// list (fastupdate), which is cheap; merging the list into the index is
// not, and PostgreSQL does it in whichever insert finds the list past
// gin_pending_list_limit (4 MB: a few thousand messages), or in
// autovacuum, whichever comes first. At a few hundred turns a second the
// insert comes first, and that commit took 200 ms. So the store merges
// the list itself, off the request path: a merger goroutine, woken once
// MergeEvery messages were committed through this Store, merges it on a
// connection of the pool.
//
// The merge is bounded: it merges the list as far as its tail when the
// merge began, and leaves what commits add meanwhile to the next one.
// gin_clean_pending_list is not: it merges "until the list is empty",
// and under a steady stream of commits the list is never empty when it
// looks, so it chased the commits' tail, one small round after another,
// each round paying again for every term it flushed into the index. The
// merges of the load script's PostgreSQL rows ran for up to 1.4 s, and
// doubled the database's CPU a request, on the core the database shares
// with the load generator (issue 50). PostgreSQL has no SQL call for the
// bounded merge; its inserts make one (ginInsertCleanup with full_clean
// off) when they find the list past gin_pending_list_limit. So the merge
// is an insert: mergeSQL, in a transaction that sets the limit to its
// least (64 kB) for itself, inserts a placeholder message (tenant "",
// seq -1: no tenant is named "") whose insert merges the list, and rolls
// back, so the placeholder is never seen; the merge itself is not undone
// (a GIN index's pages are not transactional), and the placeholder's
// index entries point at a dead row, which search skips and vacuum
// removes. work_mem is raised for the transaction so that the merge
// flushes its terms into the index once.
//
// With several replicas one merges at a time: a merge holds a
// transaction-scoped advisory lock (mergeKey), and a Store that finds it
// held skips its turn rather than queue behind the other's merge,
// holding a connection of its pool. The entries wait for the next wake,
// of either Store. A wake also sweeps the lease rows left free for
// idleLease (sweepSQL, lease.go), off the request path, at most once a
// sweepEvery: a sweep reads the whole table, and a wake every 512
// messages swept it a dozen times a second on two busy replicas (0.37 s
// of the database's time in recall-pg-2's rows of the load script, issue
// 50) for rows that only become due a minute after they were freed.

// mergeKey is the advisory lock a merge holds for its statement's
// transaction ("recall" in ASCII, then 2; SoleLockKey is 1).
const mergeKey int64 = 0x726563616c6c0002

// sweepEvery is the least time between two sweeps of a Store: a row
// free for idleLease is deleted within idleLease+sweepEvery.
const sweepEvery = idleLease / 4

// mergeSettings set, for the merge's transaction, the pending-list limit
// its insert compares the list with (the least there is, 64 kB, so that
// any list is merged) and the memory the merge gathers terms in before it
// flushes them into the index (a wake's 512 messages of prose are about
// 66,000 entries).
var mergeSettings = []string{"SET LOCAL gin_pending_list_limit = 64", "SET LOCAL work_mem = '64MB'"}

// mergeSQL inserts the placeholder message whose insert merges the
// pending list, unless another Store's merge holds mergeKey: one row
// inserted when it merged, none when it skipped.
const mergeSQL = `INSERT INTO recall_messages (tenant, conversation, seq, dl, body)
SELECT '', '', -1, 0, '' WHERE pg_try_advisory_xact_lock($1)`

// merger runs the pending-list merges of one Store.
type merger struct {
	every   int64
	pending atomic.Int64  // messages committed since the last wake
	wake    chan struct{} // buffered 1
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	merged  func(merged bool, err error) // Options.OnMerge
	now     func() time.Time             // time.Now (tests set it)
	swept   time.Time                    // the last sweep (run's)
}

func newMerger(every int, merged func(bool, error)) *merger {
	return &merger{every: int64(every), wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), merged: merged, now: time.Now}
}

// committed counts n messages committed, and wakes the merger every
// MergeEvery. It never waits.
func (m *merger) committed(n int) {
	if m.pending.Add(int64(n)) < m.every {
		return
	}
	m.pending.Store(0)
	select {
	case m.wake <- struct{}{}:
	default: // a merge is due already
	}
}

// run merges on each wake, and sweeps on those sweepEvery apart, until
// close.
func (m *merger) run(s *Store) {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-m.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		merged, err := s.merge(ctx)
		if now := m.now(); m.swept.IsZero() || now.Sub(m.swept) >= sweepEvery {
			m.swept = now
			_, _ = s.pool.Exec(ctx, sweepSQL, idleLease.Microseconds())
		}
		cancel()
		if m.merged != nil {
			m.merged(merged, err)
		}
	}
}

// close stops the merger and waits for a merge under way.
func (m *merger) close() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

// merge merges the search index's pending list as far as its tail, and
// reports whether it did (false: another Store's merge was under way).
func (s *Store) merge(ctx context.Context) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // the placeholder is never kept
	b := &pgx.Batch{}
	for _, set := range mergeSettings {
		b.Queue(set)
	}
	ins := b.Queue(mergeSQL, mergeKey)
	var merged bool
	ins.Exec(func(tag pgconn.CommandTag) error { merged = tag.RowsAffected() == 1; return nil })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return false, err
	}
	return merged, nil
}
