package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallproxy/recall/history"
)

// Plain commits to conversations that already exist (the one-statement
// commit, see Commit) do not each send their own statement: a committer
// takes every such commit of one tenant waiting when it is free, up to
// maxBatch of them on as many conversations, and sends them as one
// statement, one transaction. The server's work a turn that does not depend on the
// turn (a statement's parse, bind and executor start, a transaction's
// commit and WAL flush, a round trip) is then shared: pgbench measured
// 0.15 ms of its CPU a turn alone against 0.10-0.12 in statements of 4
// and 8 turns. Nothing waits for a batch to fill: a commit that finds a
// committer free is sent at once, alone.
//
// Each commit in a batch stays atomic and checked on its own: its
// conversation's row is updated only if its head is still the one the
// change was computed from, and its messages are inserted only if it was.
// A commit whose head moved takes the two-statement path, as an unbatched
// one does. If the server refuses the statement (nothing is written),
// every commit in it is tried again alone, so that one commit's error
// fails only that commit. A batch never holds two commits of one
// conversation: the second waits for the next batch.
//
// A batch is one tenant's, named once ($1), as every other statement of
// a request names one: on Citus, distributed by tenant, it stays on one
// shard. Batches lock their rows in conversation order, so that two
// batches (of two replicas) never wait for each other in a cycle.

const (
	// maxBatch bounds the commits in one statement.
	maxBatch = 64
	// batchTimeout bounds a batch's statement when none of its commits'
	// contexts has a deadline.
	batchTimeout = 30 * time.Second
)

// batchSQL commits many plain turns, each as fastUpdateSQL does, and
// answers the conversations that committed. Each row is found through
// the primary key and locked, in the arrays' order (a join of the arrays
// against the table may be planned as a scan of the whole table), then
// updated by its row id (and nothing else: a condition on the tenant there
// was planned, on a table the statistics thought small, as a scan of
// every row of the tenant) if its head is still the base. A row another
// commit updated since the statement began is then not found: its commit
// decides against the stored head, as one whose head moved.
const batchSQL = `WITH t AS (
  SELECT c.rid, u.* FROM unnest($2::text[], $3::bigint[], $4::int[], $5::bigint[], $6::bigint[], $7::bytea[], $8::bigint[],
    $9::bigint[], $10::bigint[], $11::int[], $12::bigint[])
    AS u(conversation, version, summaries, updated_at, incarnation, meta, docs, terms, base_version, base_summaries, base_incarnation)
  CROSS JOIN LATERAL (SELECT ctid AS rid FROM recall_conversations c WHERE c.tenant = $1 AND c.conversation = u.conversation
    FOR NO KEY UPDATE) c),
head AS (
  UPDATE recall_conversations c SET version = t.version, summaries = t.summaries, updated_at = t.updated_at,
    incarnation = t.incarnation, meta = t.meta, docs = c.docs + t.docs, terms = c.terms + t.terms
  FROM t WHERE c.ctid = t.rid AND c.version = t.base_version AND c.summaries = t.base_summaries
    AND c.incarnation = t.base_incarnation AND get_byte(c.meta, 0) = 255 -- splitSQL
  RETURNING c.conversation),
msgs AS (
  INSERT INTO recall_messages (tenant, conversation, seq, dl, created_at, body, tsv)
  SELECT $1, r.conversation, r.seq, r.dl, r.created_at, r.body, r.tsv
  FROM unnest($13::text[], $14::bigint[], $15::int[], $16::bigint[], $17::bytea[], $18::tsvector[])
    AS r(conversation, seq, dl, created_at, body, tsv)
  JOIN head h ON h.conversation = r.conversation)%s
SELECT conversation FROM head`

// batchPlainSQL and batchLeasedSQL are batchSQL as sent: the leased one
// also frees the lease rows the batch's commits carry ($19 and $20,
// each commit's lease's name and holder, "" for none) of the commits
// that committed.
var (
	batchPlainSQL  = fmt.Sprintf(batchSQL, "")
	batchLeasedSQL = fmt.Sprintf(batchSQL, `,
rel AS (
  UPDATE recall_leases l `+freeSQL+` FROM unnest($2::text[], $19::text[], $20::text[]) AS r(conversation, name, holder)
  WHERE l.name = r.name AND l.holder = r.holder AND r.holder <> '' AND r.conversation IN (SELECT conversation FROM head))`)
)

// newBatchPool opens the pool the committers send their batches on:
// conns connections of cfg whose sessions plan prepared statements once
// (plan_cache_mode force_generic_plan). With the server's default
// (auto), a statement is planned anew at each of its first five runs on
// a connection, then whenever its generic plan looks dearer than the
// plans made for the values so far: the leased batch, whose arrays' lengths
// the custom plans know, was planned again at 7,506 of 10,435 runs in the
// load script's recall-pg-2 row, 1.4 ms of the server each, as long as
// the statement's own run (docs/performance.md). Every batch statement's
// generic plan reads only its rows (TestBatchStatementReadsOnlyItsRows);
// other statements stay on the shared pool and its server's default:
// a generic plan of the exchange trim (exchanges.go) read 4 million
// blocks a run.
func newBatchPool(cfg *pgxpool.Config, conns int) (*pgxpool.Pool, error) {
	cfg.MaxConns = int32(conns)
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, c); err != nil {
				return err
			}
		}
		// Part of the connection's setup, as its handshake is: sent
		// below pgx's tracer, which counts a request's round trips.
		_, err := c.PgConn().Exec(ctx, "SET plan_cache_mode = force_generic_plan").ReadAll()
		return err
	}
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// batched is a plain commit waiting for, or in, a batch.
type batched struct {
	ctx  context.Context
	k    history.Key
	f    *fastCommit
	done chan batchResult // buffered 1
}

// batchOutcome is what became of a batched commit.
type batchOutcome int

const (
	batchCommitted batchOutcome = iota // in the store
	batchMoved                         // not written: the head was not the change's base
	batchRefused                       // not written: the server refused the batch
	batchFailed                        // err; written (fate unknown) if wrote
)

type batchResult struct {
	outcome batchOutcome
	wrote   bool
	err     error
}

// batcher runs the committers of one Store.
type batcher struct {
	s      *Store
	mu     sync.Mutex
	more   *sync.Cond // on mu: queue grew, or closed
	queue  []*batched // waiting, oldest first
	closed bool
	wg     sync.WaitGroup
	// queued and sent, if set, are called with the queue's length after
	// a commit joined it (under mu), and with each batch's size before it
	// is sent (tests).
	queued func(n int)
	sent   func(n int)
	// wait is Options.GroupWait; after starts its timer (time.AfterFunc,
	// or a test's), returning its stop.
	wait  time.Duration
	after func(d time.Duration, f func()) (stop func())
}

func newBatcher(s *Store, committers int, wait time.Duration) *batcher {
	b := &batcher{s: s, wait: wait, after: afterFunc}
	b.more = sync.NewCond(&b.mu)
	b.wg.Add(committers)
	for i := range committers {
		go b.run(i)
	}
	return b
}

// errClosed fails commits sent to a closed Store.
var errClosed = errors.New("pgstore: store closed")

// commit queues f, a plain commit of k, for a committer and waits for its
// outcome. A commit still queued when ctx ends is withdrawn (nothing
// written); once taken, its batch decides.
func (b *batcher) commit(ctx context.Context, k history.Key, f *fastCommit) batchResult {
	c := &batched{ctx: ctx, k: k, f: f, done: make(chan batchResult, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return batchResult{outcome: batchFailed, err: errClosed}
	}
	b.queue = append(b.queue, c)
	if b.queued != nil {
		b.queued(len(b.queue))
	}
	b.more.Broadcast() // not Signal: a committer standing down (run) would keep it
	b.mu.Unlock()
	select {
	case r := <-c.done:
		return r
	case <-ctx.Done():
	}
	b.mu.Lock()
	i := slices.Index(b.queue, c)
	if i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
	}
	b.mu.Unlock()
	if i >= 0 {
		return batchResult{outcome: batchFailed, err: ctx.Err()}
	}
	return <-c.done
}

// close stops the committers once their batches are done; commits still
// queued fail.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	left := b.queue
	b.queue = nil
	b.more.Broadcast()
	b.mu.Unlock()
	for _, c := range left {
		c.done <- batchResult{outcome: batchFailed, err: errClosed}
	}
	b.wg.Wait()
}

// run is committer i: it takes the commits queued of the oldest one's
// tenant, one a conversation (the queue keeps the others for later
// batches), sends them, answers each, until close. Committers past the
// first stand down while the Store shares the database: every replica
// then sends one batch at a time, so that two replicas' commits go in
// as many statements at once as one replica's, each about as large
// (with two each, recall-pg-2's batches held 3.1 commits against
// recall-pg's 6.9, and a commit cost the server 1.11 ms against 0.46;
// with one, 5.2-5.9 and 0.67-0.89 ms: docs/performance.md).
func (b *batcher) run(i int) {
	defer b.wg.Done()
	last := 0 // commits in this committer's previous batch
	for {
		b.mu.Lock()
		for !b.closed && (len(b.queue) == 0 || (i > 0 && !b.sole())) {
			b.more.Wait()
		}
		if b.closed {
			b.mu.Unlock()
			return
		}
		if b.wait > 0 && 2*len(b.queue) <= last {
			b.gather(min(last, maxBatch))
			if len(b.queue) == 0 || (i > 0 && !b.sole()) { // another committer took them, close, or a replica joined
				b.mu.Unlock()
				continue
			}
		}
		var batch []*batched
		keys := make(map[history.Key]bool)
		left := b.queue[:0]
		tenant := b.queue[0].k.Tenant
		for _, c := range b.queue {
			if len(batch) == maxBatch || c.k.Tenant != tenant || keys[c.k] {
				left = append(left, c)
				continue
			}
			keys[c.k] = true
			batch = append(batch, c)
		}
		clear(b.queue[len(left):])
		b.queue = left
		b.mu.Unlock()
		last = len(batch)
		b.send(batch)
	}
}

// gather waits, on b.mu (held), until want commits are queued, for b.wait
// at most, or until close.
func (b *batcher) gather(want int) {
	expired := false
	stop := b.after(b.wait, func() {
		b.mu.Lock()
		expired = true
		b.more.Broadcast()
		b.mu.Unlock()
	})
	for !b.closed && !expired && len(b.queue) < want {
		b.more.Wait()
	}
	stop()
}

func afterFunc(d time.Duration, f func()) (stop func()) {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}

// send commits batch in one statement and answers each commit.
func (b *batcher) send(batch []*batched) {
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.done <- batchResult{outcome: batchFailed, err: err}
			continue
		}
		live = append(live, c)
	}
	batch = live
	if len(batch) == 0 {
		return
	}
	if b.sent != nil {
		b.sent(len(batch))
	}
	slices.SortFunc(batch, func(x, y *batched) int { return strings.Compare(x.k.Conversation, y.k.Conversation) })
	ctx, cancel := batchContext(batch)
	defer cancel()
	committed, err := b.s.sendBatch(ctx, batch)
	for _, c := range batch {
		var r batchResult
		switch {
		case err == nil && committed[c.k]:
			r.outcome = batchCommitted
		case err == nil:
			r.outcome = batchMoved
		case refused(err):
			r.outcome = batchRefused
		default:
			r = batchResult{outcome: batchFailed, wrote: !pgconn.SafeToRetry(err), err: err}
		}
		c.done <- r
	}
}

// refused reports whether err is the server's answer to a statement,
// which it then did not apply (a statement outside a transaction is its
// own), other than being unable to serve it at all.
func refused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && !Unavailable(err)
}

// batchContext bounds a batch by its commits' latest deadline (or
// batchTimeout if one has none): a commit's caller ending does not
// cancel the others'.
func batchContext(batch []*batched) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithTimeout(context.Background(), batchTimeout)
		}
		if d.After(last) {
			last = d
		}
	}
	return context.WithDeadline(context.Background(), last)
}

// sendBatch runs batchSQL for batch on a connection of the batch pool and
// returns the conversations that committed.
func (s *Store) sendBatch(ctx context.Context, batch []*batched) (map[history.Key]bool, error) {
	n := len(batch)
	var (
		convs                   = make([]string, n)
		versions, updated, incs = make([]int64, n), make([]int64, n), make([]int64, n)
		summaries               = make([]int32, n)
		metas                   = make([][]byte, n)
		docs, terms             = make([]int64, n), make([]int64, n)
		baseVersions, baseIncs  = make([]int64, n), make([]int64, n)
		baseSummaries           = make([]int32, n)
		mConvs                  []string
		mSeqs, mCreated         []int64
		mDls                    []int32
		mBodies                 [][]byte
		mTsvs                   []postings
		relNames, relHolders    []string // nil: no lease
	)
	for i, c := range batch {
		f := c.f
		convs[i] = c.k.Conversation
		versions[i], summaries[i], updated[i], incs[i] = int64(f.next.Version), int32(f.next.Summaries), f.next.UpdatedAt, int64(f.next.Incarnation)
		metas[i], docs[i], terms[i] = f.meta, int64(len(f.w.seqs)), f.w.terms
		baseVersions[i], baseSummaries[i], baseIncs[i] = int64(f.base.Version), int32(f.base.Summaries), int64(f.base.Incarnation)
		for range f.w.seqs {
			mConvs = append(mConvs, c.k.Conversation)
		}
		mSeqs, mDls, mCreated = append(mSeqs, f.w.seqs...), append(mDls, f.w.dls...), append(mCreated, f.w.created...)
		mBodies, mTsvs = append(mBodies, f.w.bodies...), append(mTsvs, f.w.tsvs...)
		if f.rel != nil {
			if relNames == nil {
				relNames, relHolders = make([]string, n), make([]string, n)
			}
			relNames[i], relHolders[i] = f.rel.name, f.rel.holder
		}
	}
	committed := make(map[history.Key]bool, n)
	tenant := batch[0].k.Tenant
	args := []any{tenant, convs, versions, summaries, updated, incs, metas, docs, terms,
		baseVersions, baseSummaries, baseIncs, mConvs, mSeqs, mDls, mCreated, mBodies, mTsvs}
	sql := batchPlainSQL
	if relNames != nil {
		sql = batchLeasedSQL
		args = append(args, relNames, relHolders)
	}
	rows, err := s.batchPool.Query(ctx, sql, args...)
	if err == nil {
		k := history.Key{Tenant: tenant}
		_, err = pgx.ForEachRow(rows, []any{&k.Conversation}, func() error {
			committed[k] = true
			return nil
		})
	}
	if Unavailable(err) {
		s.batchPool.Reset() // a restarted server: the next batch connects anew (see again)
	}
	return committed, err
}

// sole reports whether the Store is the database's only writer.
func (b *batcher) sole() bool {
	_, ok := b.s.sole.sole()
	return ok
}

// wake has the committers look again at the queue and whether they may
// take it: the Store started or stopped being the only writer.
func (b *batcher) wake() {
	b.mu.Lock()
	b.more.Broadcast()
	b.mu.Unlock()
}
