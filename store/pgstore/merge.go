package pgstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A commit adds its messages' search entries to the GIN index's pending
// list (fastupdate), which is cheap; merging the list into the index is
// not, and PostgreSQL does it in whichever insert finds the list past
// gin_pending_list_limit (4 MB: a few thousand messages), or in
// autovacuum, whichever comes first. At a few hundred turns a second the
// insert comes first, and that commit took 200 ms. So the store merges
// the list itself, off the request path: a merger goroutine, woken once
// MergeEvery messages were committed through this Store, runs
// gin_clean_pending_list on a connection of the pool. With several
// replicas one merges at a time: a merge holds a transaction-scoped
// advisory lock (mergeKey), and a Store that finds it held skips its turn
// rather than queue behind the other's merge, holding a connection of its
// pool, to merge what came in meanwhile. The entries wait for the next
// wake, of either Store. A wake also sweeps the lease rows left free for
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

// mergeSQL merges the pending list unless another Store's merge holds
// mergeKey, and returns the pages merged, 0 when it skipped.
// gin_clean_pending_list itself would wait for a merge under way.
const mergeSQL = `SELECT CASE WHEN pg_try_advisory_xact_lock($1) THEN gin_clean_pending_list('recall_messages_search') ELSE 0 END`

// merger runs the pending-list merges of one Store.
type merger struct {
	every   int64
	pending atomic.Int64  // messages committed since the last wake
	wake    chan struct{} // buffered 1
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	merged  func(pages int64, err error) // Options.OnMerge
	now     func() time.Time             // time.Now (tests set it)
	swept   time.Time                    // the last sweep (run's)
}

func newMerger(every int, merged func(int64, error)) *merger {
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
		var pages int64
		err := s.pool.QueryRow(ctx, mergeSQL, mergeKey).Scan(&pages)
		if now := m.now(); m.swept.IsZero() || now.Sub(m.swept) >= sweepEvery {
			m.swept = now
			_, _ = s.pool.Exec(ctx, sweepSQL, idleLease.Microseconds())
		}
		cancel()
		if m.merged != nil {
			m.merged(pages, err)
		}
	}
}

// close stops the merger and waits for a merge under way.
func (m *merger) close() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}
