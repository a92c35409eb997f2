package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallproxy/recall/history"
)

// SetMergeClock sets the clock by which s's merger spaces its sweeps of
// idle lease rows. Set it before the first commit.
func SetMergeClock(s *Store, now func() time.Time) { s.merger.now = now }

// GatherTimer replaces the committers' group-wait timer (batch.go's
// afterFunc) with after. Set it before the first commit.
func GatherTimer(s *Store, after func(d time.Duration, f func()) (stop func())) {
	s.batcher.mu.Lock()
	defer s.batcher.mu.Unlock()
	s.batcher.after = after
}

// BatchHooks sets the committers' hooks (batch.go): queued sees the
// queue's length after each commit joins it, sent each batch's size
// before it is sent. Set them before the first commit.
func BatchHooks(s *Store, queued, sent func(n int)) {
	s.batcher.mu.Lock()
	defer s.batcher.mu.Unlock()
	s.batcher.queued, s.batcher.sent = queued, sent
}

// BatchSQL and BatchLeasedSQL are the batched commit's statements,
// without and with the lease rows it frees.
var BatchSQL, BatchLeasedSQL = batchPlainSQL, batchLeasedSQL

// TakeSQL is the statement that takes a lease (and queues for it).
const TakeSQL = takeSQL

// FreeSQL is the SET clause of every statement that frees a lease row.
const FreeSQL = freeSQL

// LoadSQL is a load's first statement, without the lease: its arguments
// are the tenant, the conversation, the bound after which messages are
// read, the limit and whether the read stops at the summary.
var LoadSQL = loadPlainSQL

// TakingSQL is the reads that take an exchange's lease in their own
// statement (load's and follow's).
var TakingSQL = []string{loadTakingSQL, followTakingSQL}

// The statements that write a lease row on their own (they commit
// lazily), and FreeRowSQL, which frees one in a commit's transaction.
const ReleaseSQL, RenewSQL, UnqueueSQL, FreeRowSQL = releaseSQL, renewSQL, unqueueSQL, freeRowSQL

// RenewKept runs one round of the kept leases' renewal (keep.go) now.
func RenewKept(s *Store) { s.renewKept() }

// MergeKey is the advisory lock a merge of the search index's pending
// list holds.
const MergeKey = mergeKey

// BatchPool is the pool the committers send their batches on.
func BatchPool(s *Store) *pgxpool.Pool { return s.batchPool }

// Resend is the commit's second sending of a change on its base after
// its first failed with the connection (commit.go), first its error.
func Resend(ctx context.Context, s *Store, k history.Key, c history.Change, first error) (history.Meta, error) {
	return s.resend(ctx, k, &c, nil, first)
}
