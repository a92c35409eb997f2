// Package pgstore is the history.Store for several Recall replicas: one
// PostgreSQL database, reached through a bounded pgx pool.
//
// The schema (migrations/*.sql, embedded and applied at Open under a lock)
// is keyed by tenant, then conversation. A conversation is a metadata row
// (history.MarshalMeta) and append-only message rows by sequence number
// (the history codec, as Badger keeps them, with their search terms as a
// tsvector under a GIN index); a commit writes them in one transaction, checked against the metadata's
// Version, so a commit is all or nothing and durable when it returns (as
// the server's synchronous_commit has it).
//
// A read of a conversation is one statement (one snapshot, one round
// trip) unless the tail it needs is longer than the first batch. The
// store also implements history.Leaser with lease rows, so that a
// background job (a summary, a retention pass) runs once across replicas,
// and takes an exchange's lease on its conversation with the plan's read
// and drops it with the commit (history.ExchangeLease, lease.go), so
// that the exchanges on one conversation take turns across replicas at no
// round trip of their own. And it implements history.SoleWriter with an
// advisory lock (sole.go): a replica alone on the database serves its
// window cache without reading heads, and holds its leases in memory.
//
// Errors that mean the database cannot be reached wrap
// history.ErrUnavailable.
package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// MaxConns bounds the connection pools: the batched commits'
	// (Committers of them, see batch.go) and the one every other
	// statement shares (the rest, at least one). Default 10.
	MaxConns int32
	// Lease is how long a lease outlives a holder that stopped renewing it
	// (a killed replica). Default 15s; holders renew at a third of it.
	Lease time.Duration
	// Tracer, if set, traces every statement and batch (pgx's
	// QueryTracer, and BatchTracer if it implements it): for metrics,
	// logs and tests. Default none.
	Tracer pgx.QueryTracer
	// FirstBatch is how many of the newest messages a Load reads in its
	// first statement (at least twice the request's MinMessages). Default
	// 128.
	FirstBatch int
	// MergeEvery is how many messages committed through the Store wake
	// its merger, which merges the search index's pending list and
	// sweeps idle lease rows off the request path (see merge.go).
	// Default 512.
	MergeEvery int
	// Committers is how many batched commit statements may be under way
	// at once while the Store is the database's only writer, one while
	// it shares it (see batch.go); each holds a connection while its
	// statement runs. Default 2.
	Committers int
	// OnMerge, if set, is called after each merge (and its sweep, when
	// one was due) with whether it merged (false when another Store's
	// merge was under way) and its error: for metrics and tests.
	// Default none.
	OnMerge func(merged bool, err error)
	// OnLeaseWait, if set, is called with a lease's name each time a
	// read that is to take it (history.Query.Lease) or Acquire finds it
	// held by another holder, before it waits: for tests. Default none.
	OnLeaseWait func(name string)
	// JoinTimeout bounds how long Open waits for a Store that holds the
	// database alone (see sole.go) to make way, and (up to 5s) how long
	// a write waits for a broken lock connection to be replaced. Default
	// 30s.
	JoinTimeout time.Duration
	// UpgradeEvery is how often a Store that shares the database tries to
	// hold it alone again (see sole.go). Default 5s.
	UpgradeEvery time.Duration
	// UpgradeTicks, if set, replaces UpgradeEvery's ticker: each receive
	// is a try (for tests).
	UpgradeTicks <-chan time.Time
	// OnSole, if set, is called when the Store starts (true) or stops
	// (false) being the database's only writer: for logs, metrics and
	// tests. Calls are serialised. Default none.
	OnSole func(sole bool)
	// FreeLeases frees every exchange's lease in its commit, as Stores did
	// before they kept them (keep.go): for tests and measurements.
	FreeLeases bool
	// GroupWait is how long a committer waits for commits to gather when
	// fewer than half as many are queued as its last batch held (see
	// batch.go): until as many as that batch have come, or GroupWait.
	// Default 1ms; negative: never.
	GroupWait time.Duration
}

// Store is a history.Store on PostgreSQL.
type Store struct {
	pool       *pgxpool.Pool
	batchPool  *pgxpool.Pool // the batched commits' (newBatchPool)
	lease      time.Duration
	firstBatch int
	holder     string        // this Store's lease holder prefix
	leases     atomic.Uint64 // numbers each lease taken
	heldMu     sync.Mutex
	held       map[string]*heldLease // the leases this Store holds (lease.go)
	version    int                   // the schema version
	merger     *merger
	batcher    *batcher
	onWait     func(name string)
	sole       *soleLock
	keeper     keeper // the leases kept after a commit (keep.go)
	noKeep     bool   // Options.FreeLeases
}

var (
	_ history.Store          = (*Store)(nil)
	_ history.Leaser         = (*Store)(nil)
	_ history.ExchangeLeaser = (*Store)(nil)
	_ history.HeadReader     = (*Store)(nil)
	_ history.Follower       = (*Store)(nil)
	_ history.SoleWriter     = (*Store)(nil)
)

// Open connects to the database at url (postgres://user:pass@host/db),
// applies the embedded migrations under a lock, and returns the Store. A
// database that cannot be reached fails with an error wrapping
// history.ErrUnavailable. The error never holds the URL's password.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors quote the URL: say only what is wrong.
		return nil, errors.New("pgstore: invalid store_url (want postgres://user:password@host:port/database?options)")
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 10
	}
	if o.GroupWait == 0 {
		o.GroupWait = time.Millisecond
	}
	if o.Committers <= 0 {
		o.Committers = 2
	}
	cfg.MaxConns = max(o.MaxConns-int32(o.Committers), 1)
	cfg.MinConns = 0
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerPostings(c.TypeMap())
		return nil
	}
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	batchCfg := cfg.Copy()
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	if o.FirstBatch <= 0 {
		o.FirstBatch = 128
	}
	if o.MergeEvery <= 0 {
		o.MergeEvery = 512
	}
	if o.JoinTimeout <= 0 {
		o.JoinTimeout = 30 * time.Second
	}
	if o.UpgradeEvery <= 0 {
		o.UpgradeEvery = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, wrap("open", err)
	}
	// Join the other Stores on the database before writing anything,
	// migrations included.
	sole := newSoleLock(cfg.ConnConfig, o)
	if err := sole.open(ctx); err != nil {
		pool.Close()
		sole.close()
		return nil, wrap("open", err)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	host, _ := os.Hostname()
	s := &Store{pool: pool, lease: o.Lease, firstBatch: o.FirstBatch, onWait: o.OnLeaseWait,
		holder: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(id[:])), held: map[string]*heldLease{}}
	s.sole = sole
	sole.yielding = s.publishLeases
	sole.want, sole.lost = s.wanted, s.dropKept
	s.keeper = keeper{contested: map[string]time.Time{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.noKeep = o.FreeLeases
	if s.version, err = migrate(ctx, pool); err != nil {
		pool.Close()
		sole.close()
		return nil, wrap("migrate", err)
	}
	if s.batchPool, err = newBatchPool(batchCfg, o.Committers); err != nil {
		pool.Close()
		sole.close()
		return nil, wrap("open", err)
	}
	s.batcher = newBatcher(s, o.Committers, o.GroupWait)
	sole.changed = s.batcher.wake
	sole.start()
	s.merger = newMerger(o.MergeEvery, o.OnMerge)
	go s.merger.run(s)
	return s, nil
}

// Close stops the committers (once their batches are done: later commits
// fail) and the merger, closes the pools (calls in flight fail), then
// releases the sole-writer lock.
func (s *Store) Close() {
	s.batcher.close()
	s.batchPool.Close()
	s.letKept()
	s.merger.close()
	s.pool.Close()
	s.sole.close()
}

// Sole reports whether this Store is now the database's only writer, and
// the epoch of that state (see history.SoleWriter and sole.go).
func (s *Store) Sole() (epoch uint64, ok bool) { return s.sole.sole() }

// Ping checks that the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.pool.Ping(ctx))
}

// SchemaVersion returns the schema version Open left the database at.
func (s *Store) SchemaVersion() int { return s.version }

// Pool exposes the pool for operator tools and tests.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// again runs op, and once more after resetting the pool if it failed
// because the database could not be reached: after a database restart
// every idle connection of the pool is dead, and only its first use tells
// (the pool pings only connections idle for a second). op must be safe to
// repeat.
func (s *Store) again(ctx context.Context, op func() error) error {
	err := op()
	if err != nil && errors.Is(err, history.ErrUnavailable) && ctx.Err() == nil {
		s.pool.Reset()
		s.batchPool.Reset()
		err = op()
	}
	return err
}

// wrap adds the operation to err and, when err means the database could
// not be reached, history.ErrUnavailable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if Unavailable(err) {
		return fmt.Errorf("pgstore: %s: %w: %w", op, history.ErrUnavailable, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// Unavailable reports whether err means the database could not be
// reached or went away: a connection refused, reset or closed, a server
// shutting down or starting, or out of connections. An error the server
// answered with for the statement itself (a constraint, a syntax error)
// is not, and neither is a context ending.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			strings.HasPrefix(pgErr.Code, "57P"), // admin/crash shutdown, cannot connect now
			pgErr.Code == "53300":                // too many connections
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		pgconn.SafeToRetry(err):
		return true
	}
	// pgx reports a connection it already closed, and a closed pool, in
	// plain errors.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool")
}

// conflict maps the errors of racing writers to history.ErrConflict: two
// commits creating one conversation (a unique violation), a serialization
// failure or a deadlock.
func conflict(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505", "40001", "40P01":
			return true
		}
	}
	return false
}

// Head reads the conversation's head (Version, Summaries, Incarnation): what a
// replica's window cache checks before serving from memory.
func (s *Store) Head(ctx context.Context, k history.Key) (h history.Head, err error) {
	err = s.again(ctx, func() error { h, err = s.head(ctx, k); return err })
	return h, err
}

func (s *Store) head(ctx context.Context, k history.Key) (history.Head, error) {
	var version, incarnation int64
	var summaries int32
	err := s.pool.QueryRow(ctx, `SELECT version, summaries, incarnation FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
		k.Tenant, k.Conversation).Scan(&version, &summaries, &incarnation)
	if errors.Is(err, pgx.ErrNoRows) {
		return history.Head{}, nil
	}
	if err != nil {
		return history.Head{}, wrap("head "+k.String(), err)
	}
	return history.Head{Version: uint64(version), Summaries: int(summaries), Incarnation: uint64(incarnation)}, nil
}

// loadSQL reads the metadata and the newest messages in one statement,
// one snapshot: the metadata row is the one with seq 0 (messages count
// from 1), with the bound the messages were read after: $3 or, for a
// read that stops at the summary ($5, history.Query.Summarized), the
// summary's covered-through if it is later (the through column), so
// that a context's read takes the turns after the summary, not the
// newest first batch of the whole conversation. The first %s is CTEs
// before the read (fastTakeSQL), the second a condition on the
// metadata's read (leasedSQL, tookSQL): without it (a NULL bound) no
// message is read; the third a row more (tookRowSQL). The bound is a subquery, not a join, so that the
// index scan starts at it.
const loadSQL = `WITH %[1]sc AS (SELECT meta, summary, CASE WHEN $5 THEN greatest($3, through) ELSE $3 END AS lo
  FROM recall_conversations WHERE tenant = $1 AND conversation = $2%[2]s)
SELECT 0::bigint, meta, summary, lo FROM c
UNION ALL
(SELECT seq, body, NULL::bytea, 0::bigint FROM recall_messages WHERE tenant = $1 AND conversation = $2 AND seq > (SELECT lo FROM c)
 ORDER BY seq DESC LIMIT $4)%[3]s`

// followSQL reads a conversation's head and, if it is not the one given
// ($5-$7), its metadata and its newest messages after $3, in one
// statement, one snapshot; the metadata and the summary are not read
// when the head is the one given. The first %s is CTEs before the read
// (fastTakeSQL), the second a condition on the head's read (leasedSQL,
// tookSQL), the third a row more (tookRowSQL).
const followSQL = `WITH %[1]sh AS (SELECT version, summaries, incarnation, meta, summary,
    (version, summaries, incarnation) IS DISTINCT FROM ($5::bigint, $6::int, $7::bigint) AS moved
  FROM recall_conversations WHERE tenant = $1 AND conversation = $2%[2]s)
SELECT 0::bigint, CASE WHEN moved THEN meta END, CASE WHEN moved THEN summary END, version, summaries, incarnation FROM h
UNION ALL
(SELECT seq, body, NULL::bytea, 0::bigint, 0::int, 0::bigint FROM recall_messages
 WHERE tenant = $1 AND conversation = $2 AND seq > $3 AND EXISTS (SELECT FROM h WHERE moved)
 ORDER BY seq DESC LIMIT $4)%[3]s`

// The reads as they are sent: alone; after the lease's take in a batch
// (leased), reading nothing unless the take took it ($8 and $9 in
// follow's, $6 and $7 in load's: the lease's name and holder); and
// taking the lease themselves (taking, see fastTakeSQL: $8-$10 in
// follow's, $6-$8 in load's). The batch's take is a statement of its
// own, before the read, so that the read's snapshot, taken once the
// take returned, holds every commit of the lease's last holder: a commit
// drops the lease in its own transaction, and the take waits for that
// transaction to end.
var (
	loadPlainSQL    = fmt.Sprintf(loadSQL, "", "", "")
	loadLeasedSQL   = fmt.Sprintf(loadSQL, "", leasedSQL(6), "")
	loadTakingSQL   = fmt.Sprintf(loadSQL, fastTakeSQL(6), tookSQL, tookRowSQL(", 0::bigint"))
	followPlainSQL  = fmt.Sprintf(followSQL, "", "", "")
	followLeasedSQL = fmt.Sprintf(followSQL, "", leasedSQL(8), "")
	followTakingSQL = fmt.Sprintf(followSQL, fastTakeSQL(8), tookSQL, tookRowSQL(", 0::bigint, 0::int, 0::bigint"))
)

// leasedSQL is the condition that the lease named $n is held by $n+1.
func leasedSQL(n int) string {
	return fmt.Sprintf(" AND EXISTS (SELECT FROM recall_leases WHERE name = $%d AND holder = $%d)", n, n+1)
}

// rangeSQL reads messages lo < seq <= hi, newest first.
const rangeSQL = `SELECT seq, body FROM recall_messages WHERE tenant = $1 AND conversation = $2 AND seq > $3 AND seq <= $4
ORDER BY seq DESC LIMIT $5`

const metaSQL = `SELECT meta, summary FROM recall_conversations WHERE tenant = $1 AND conversation = $2`

// Load reads the metadata and the tail q asks for, newest first, skipping
// inactive ranges, and returns the tail oldest first. The first statement
// reads the metadata with the newest FirstBatch messages; a tail longer
// than that is read on in a repeatable-read transaction, in batches twice
// the size of the one before. q.Lease, if not held, is taken first, in
// the same round trip as the first statement (see leased).
func (s *Store) Load(ctx context.Context, k history.Key, q history.Query) (snap history.Snapshot, err error) {
	err = s.leased(ctx, k, q.Lease, func(take *leaseTake) error {
		return s.again(ctx, func() error { snap, err = s.load(ctx, k, q, take); return err })
	})
	return snap, err
}

func (s *Store) load(ctx context.Context, k history.Key, q history.Query, take *leaseTake) (history.Snapshot, error) {
	limit := max(s.firstBatch, 2*q.MinMessages)
	var (
		w     walker
		found bool
		batch []history.Message
		lo    int64 // the messages were read after lo (loadSQL)
	)
	sql := loadPlainSQL
	switch {
	case take != nil && take.fast:
		sql = loadTakingSQL
	case take != nil:
		sql = loadLeasedSQL
	}
	err := s.query(ctx, take, sql, []any{k.Tenant, k.Conversation, int64(q.After), limit, q.Summarized}, func(rows pgx.Rows) error {
		var after int64
		var err error
		batch, err = scanTail(rows, take.flag(), []any{&after}, func(b, sb []byte) error {
			m, err := readMeta(b, sb)
			if err != nil {
				return err
			}
			w.meta, found, lo = m, true, after
			return nil
		})
		return err
	})
	if err != nil || (take != nil && !take.ok) {
		return history.Snapshot{}, wrap("load "+k.String(), err)
	}
	if !found {
		return history.Snapshot{Complete: true}, nil
	}
	w.q, w.orig = q.Resolve(&w.meta), q
	// UNION ALL keeps each branch's order in practice, not by contract.
	sortDesc(batch)
	w.take(batch)
	hi := uint64(0) // where the read goes on, if it must
	switch {
	case w.done:
	case len(batch) == limit:
		hi = batch[len(batch)-1].Seq - 1
	case uint64(lo) > w.q.After:
		// The through column is past the summary the metadata holds (a
		// replica of an earlier build changed the summary without
		// writing it): the messages up to it are read too.
		hi = uint64(lo)
	}
	if hi > 0 {
		if err := s.loadMore(ctx, k, &w, hi, limit); err != nil {
			return history.Snapshot{}, err
		}
	}
	return w.snapshot(), nil
}

// scanTail reads the rows of a statement that returns a conversation's
// row (seq 0) among its messages (seq, message, summary, then the
// columns extra points to): it hands the conversation's row to conv,
// with extra scanned, and returns the messages, decoded, in the order
// read. A row with seq -1 (tookRowSQL) sets *took. It closes rows.
func scanTail(rows pgx.Rows, took *bool, extra []any, conv func(b, sb []byte) error) ([]history.Message, error) {
	defer rows.Close()
	var batch []history.Message
	var seq int64
	var b, sb []byte
	dest := append([]any{&seq, &b, &sb}, extra...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if seq < 0 && took != nil {
			*took = true
			continue
		}
		if seq == 0 {
			if err := conv(b, sb); err != nil {
				return nil, err
			}
			continue
		}
		msg, err := history.DecodeMessage(b, uint64(seq))
		if err != nil {
			return nil, err
		}
		batch = append(batch, msg)
	}
	return batch, rows.Err()
}

// Follow implements history.Follower in one statement: the head, and if
// it is not h, the metadata with the newest messages after after (at
// most the first batch's size: a cache that finds fewer than the head
// says were appended reads the window again). lease, if not held, is
// taken in the same round trip (see leased).
func (s *Store) Follow(ctx context.Context, k history.Key, h history.Head, after uint64, lease *history.ExchangeLease) (head history.Head, snap *history.Snapshot, err error) {
	err = s.leased(ctx, k, lease, func(take *leaseTake) error {
		return s.again(ctx, func() error { head, snap, err = s.follow(ctx, k, h, after, take); return err })
	})
	return head, snap, err
}

func (s *Store) follow(ctx context.Context, k history.Key, h history.Head, after uint64, take *leaseTake) (history.Head, *history.Snapshot, error) {
	var (
		head         history.Head
		w            walker
		found, moved bool
		batch        []history.Message
	)
	sql := followPlainSQL
	switch {
	case take != nil && take.fast:
		sql = followTakingSQL
	case take != nil:
		sql = followLeasedSQL
	}
	args := []any{k.Tenant, k.Conversation, int64(after), s.firstBatch, int64(h.Version), int32(h.Summaries), int64(h.Incarnation)}
	err := s.query(ctx, take, sql, args, func(rows pgx.Rows) error {
		var version, incarnation int64
		var summaries int32
		var err error
		batch, err = scanTail(rows, take.flag(), []any{&version, &summaries, &incarnation}, func(b, sb []byte) error {
			found, moved = true, b != nil
			head = history.Head{Version: uint64(version), Summaries: int(summaries), Incarnation: uint64(incarnation)}
			if !moved {
				return nil
			}
			m, err := readMeta(b, sb)
			if err != nil {
				return err
			}
			w.meta = m
			return nil
		})
		return err
	})
	if err != nil || (take != nil && !take.ok) {
		return history.Head{}, nil, wrap("follow "+k.String(), err)
	}
	if !found {
		return history.Head{}, &history.Snapshot{Complete: true}, nil
	}
	if !moved {
		return head, nil, nil
	}
	q := history.Query{After: after, Tokens: math.MaxInt}
	w.q, w.orig = q.Resolve(&w.meta), q
	sortDesc(batch)
	w.take(batch)
	snap := w.snapshot()
	return head, &snap, nil
}

// loadMore reads on from hi in a repeatable-read transaction. If the
// conversation changed since the first statement, it reads the tail again
// from the newest message.
func (s *Store) loadMore(ctx context.Context, k history.Key, w *walker, hi uint64, size int) error {
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var b, sb []byte
		err := tx.QueryRow(ctx, metaSQL, k.Tenant, k.Conversation).Scan(&b, &sb)
		if errors.Is(err, pgx.ErrNoRows) {
			*w = walker{q: w.orig, orig: w.orig, done: true} // deleted meanwhile
			return nil
		}
		if err != nil {
			return err
		}
		m, err := readMeta(b, sb)
		if err != nil {
			return err
		}
		if m.Version != w.meta.Version || m.NextSeq != w.meta.NextSeq || len(m.Gaps) != len(w.meta.Gaps) {
			*w = walker{q: w.orig.Resolve(&m), orig: w.orig, meta: m}
			hi = m.NextSeq - 1
		}
		batch := make([]history.Message, 0, size)
		for !w.done && hi > w.q.After {
			if g, ok := w.meta.InGap(hi); ok {
				hi = g.From - 1
				continue
			}
			size = min(2*size, 4096)
			batch = batch[:0]
			rows, err := tx.Query(ctx, rangeSQL, k.Tenant, k.Conversation, int64(w.q.After), int64(hi), size)
			if err != nil {
				return err
			}
			for rows.Next() {
				var seq int64
				var b []byte
				if err := rows.Scan(&seq, &b); err != nil {
					rows.Close()
					return err
				}
				msg, err := history.DecodeMessage(b, uint64(seq))
				if err != nil {
					rows.Close()
					return err
				}
				batch = append(batch, msg)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			w.take(batch)
			if len(batch) < size {
				break // nothing older
			}
			hi = batch[len(batch)-1].Seq - 1
		}
		return nil
	})
	if err != nil {
		return wrap("load "+k.String(), err)
	}
	return nil
}

func sortDesc(msgs []history.Message) {
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Seq > msgs[i-1].Seq {
			// Out of order: sort (insertion sort; normally never runs).
			for j := i; j > 0 && msgs[j].Seq > msgs[j-1].Seq; j-- {
				msgs[j], msgs[j-1] = msgs[j-1], msgs[j]
			}
		}
	}
}

// walker applies history.Query.Done to messages offered newest first, as
// the Badger store's read does: messages in the metadata's inactive
// ranges are skipped (the rule never sees them), the others are checked
// against the rule, then kept if active.
type walker struct {
	q      history.Query // resolved against meta
	orig   history.Query // as asked
	meta   history.Meta
	tail   []history.Message // newest first
	tokens int
	turns  int
	done   bool
}

func (w *walker) take(batch []history.Message) {
	for _, msg := range batch {
		if w.done {
			return
		}
		if msg.Seq >= w.meta.NextSeq {
			continue
		}
		if _, ok := w.meta.InGap(msg.Seq); ok {
			continue
		}
		oldest := ""
		if n := len(w.tail); n > 0 {
			oldest = w.tail[n-1].Role
		}
		if w.q.Done(len(w.tail), w.tokens, w.turns, oldest, msg.Seq, w.meta.Cut) {
			w.done = true
			return
		}
		if msg.Active() {
			w.tail = append(w.tail, msg)
			w.tokens += msg.Tokens
			if msg.Role == wire.RoleUser {
				w.turns++
			}
		}
	}
}

func (w *walker) snapshot() history.Snapshot {
	tail := w.tail
	for i, j := 0, len(tail)-1; i < j; i, j = i+1, j-1 {
		tail[i], tail[j] = tail[j], tail[i]
	}
	if tail == nil && w.meta.Messages > 0 {
		tail = []history.Message{}
	}
	return history.Snapshot{Meta: w.meta, Tail: tail, Complete: len(tail) >= w.meta.Messages}
}

// Messages calls fn for each message after the given sequence number,
// oldest first, with the flags the metadata gives it, in chunks that each
// read one snapshot (see messages), streaming the rows.
func (s *Store) Messages(ctx context.Context, k history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	called := false // once fn saw a message, a retry would repeat it
	f := func(m history.Message) bool { called = true; return fn(m) }
	err := s.messages(ctx, k, after, all, f)
	if err != nil && !called && errors.Is(err, history.ErrUnavailable) && ctx.Err() == nil {
		s.pool.Reset()
		err = s.messages(ctx, k, after, all, f)
	}
	return err
}

// messagesSQL reads up to $4 of a conversation's messages after $3,
// oldest first.
const messagesSQL = `SELECT seq, body FROM recall_messages WHERE tenant = $1 AND conversation = $2 AND seq > $3 ORDER BY seq LIMIT $4`

// messagesChunk is how many messages a read asks for in its first
// statement; each later statement asks for twice as many as the one
// before. A reader that stops after a few (a page of items, an item
// found by its id) costs the database about a chunk, never the rest of
// the conversation (a result's rows are all sent, and read, however
// early its reader stops); a whole read of n messages takes about
// log2(n/messagesChunk) more round trips.
const messagesChunk = 64

// messages reads the conversation in chunks (messagesChunk). Each chunk
// is one round trip, one transaction: BEGIN (repeatable read: the
// metadata and the messages are of one snapshot), the metadata, the
// messages, COMMIT. The first chunk's metadata bounds the read: later
// chunks read no message it does not count, and stop where the
// conversation has since been deleted or made again (another
// incarnation); a message erased in between is not read.
func (s *Store) messages(ctx context.Context, k history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	var first *history.Meta
	for limit := int64(messagesChunk); ; limit = min(2*limit, 1<<20) {
		r, err := s.messagesChunk(ctx, k, after, limit, all, first, fn)
		if err != nil {
			return wrap("messages "+k.String(), err)
		}
		if r.done || r.rows < limit {
			return ctx.Err()
		}
		first, after = &r.meta, r.last
	}
}

// chunkRead is what a chunk of a messages read found.
type chunkRead struct {
	meta history.Meta // the first chunk's metadata (the bound of the later ones)
	rows int64        // rows the chunk read
	last uint64       // the last row's seq
	done bool         // the reader stopped, or nothing later is to be read
}

// messagesChunk reads up to limit messages after after in one round trip
// (see messages); first is the first chunk's metadata, nil for the first.
func (s *Store) messagesChunk(ctx context.Context, k history.Key, after uint64, limit int64, all bool, first *history.Meta, fn func(history.Message) bool) (chunkRead, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return chunkRead{}, err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	b.Queue(metaSQL, k.Tenant, k.Conversation)
	b.Queue(messagesSQL, k.Tenant, k.Conversation, int64(after), limit)
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	r, err := readMessages(ctx, br, all, first, fn)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback(conn.Conn())
	}
	return r, err
}

// readMessages reads a chunk's results up to its messages, calling fn
// for each until it answers false.
func readMessages(ctx context.Context, br pgx.BatchResults, all bool, first *history.Meta, fn func(history.Message) bool) (chunkRead, error) {
	var r chunkRead
	if _, err := br.Exec(); err != nil {
		return r, err
	}
	var b, sb []byte
	err := br.QueryRow().Scan(&b, &sb)
	found := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil // gone: its messages are too
	}
	if err != nil {
		return r, err
	}
	if found {
		if r.meta, err = readMeta(b, sb); err != nil {
			return r, err
		}
	}
	bound := r.meta.NextSeq
	if first != nil {
		if found && r.meta.Incarnation != first.Incarnation {
			found = false // deleted and made again since the first chunk
		}
		bound = first.NextSeq
	}
	r.done = !found
	rows, err := br.Query()
	if err != nil {
		return r, err
	}
	defer rows.Close()
	for rows.Next() {
		r.rows++
		if r.done {
			continue // the rest of the result is drained by Close
		}
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return r, err
		}
		r.last = uint64(seq)
		if uint64(seq) >= bound {
			r.done = true
			continue
		}
		msg, err := history.DecodeMessage(b, uint64(seq))
		if err != nil {
			return r, err
		}
		msg.Flags |= r.meta.FlagsAt(msg.Seq)
		if !all && !msg.Active() {
			continue
		}
		if ctx.Err() != nil || !fn(msg) {
			r.done = true
		}
	}
	if first != nil {
		r.meta = *first
	}
	return r, rows.Err()
}

// Delete erases the conversation's rows (metadata, messages with their
// search entries, exchange records) in one transaction, one round trip. The metadata row
// goes before the exchange records: an AppendExchanges holding it is
// waited for, and its records are then deleted too (see AppendExchanges).
func (s *Store) Delete(ctx context.Context, k history.Key) error {
	if err := s.sole.ready(ctx); err != nil {
		return wrap("delete "+k.String(), err)
	}
	unfence, err := s.fence(ctx, k)
	if err != nil {
		return wrap("delete "+k.String(), err)
	}
	defer unfence()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`DELETE FROM recall_messages WHERE tenant = $1 AND conversation = $2`, k.Tenant, k.Conversation)
	b.Queue(`DELETE FROM recall_conversations WHERE tenant = $1 AND conversation = $2`, k.Tenant, k.Conversation)
	b.Queue(`DELETE FROM recall_exchanges WHERE tenant = $1 AND conversation = $2`, k.Tenant, k.Conversation)
	b.Queue("COMMIT")
	return s.again(ctx, func() error { return wrap("delete "+k.String(), s.runTx(ctx, b)) })
}

// runTx sends a batch that opens and commits a transaction on one
// connection and reads every result; on an error the transaction is
// rolled back (the pool discards a connection left inside one).
func (s *Store) runTx(ctx context.Context, b *pgx.Batch) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	err = conn.SendBatch(ctx, b).Close()
	if err != nil {
		rollback(conn.Conn())
	}
	return err
}

// rollback ends a transaction a failed batch left open, if the
// connection is still usable.
func rollback(c *pgx.Conn) {
	if c.IsClosed() || c.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = c.Exec(ctx, "ROLLBACK")
}
