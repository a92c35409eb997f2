package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
)

// A lease is a row of recall_leases named for what it serialises, which
// stays once made: a release frees it (freeSQL: no holder, expired at
// the release) and a take takes it back, each an UPDATE of the row's
// unindexed columns, which PostgreSQL makes in place (a HOT update, its
// old version pruned by the next access to the page) rather than an
// insert and a delete, each leaving a dead row and a dead index entry
// behind for vacuum: two replicas taking turns on 162 conversations left
// 16,135 dead rows beside the 162 live ones (issue 50). Rows free, or
// expired, for longer than idleLease are deleted by the merger's sweep
// (sweepSQL), so that the table holds the names in use, not every name
// ever leased.

// A lease row's write commits lazily (lazySQL, in the statement's
// RETURNING: synchronous_commit off for the statement's transaction): a
// take, a renewal, a place in the queue and a release are visible to
// every other process as soon as they commit, and return without
// waiting for the WAL's flush, which a read that takes an exchange's
// lease would otherwise wait for on every request that a replica serves
// after another (one replica holds its leases in memory, without that
// wait). The next durable commit flushes them with its own. A lease
// write lost with the server (a crash before the flush) misleads only
// the order of the work, not its outcome: commits and summaries are
// checked against the stored head, and a lease row whose release was
// lost expires (Options.Lease). The commits that free a lease in their
// own statement stay durable.

// lazySQL makes the transaction of the statement whose RETURNING
// evaluates it commit without waiting for the WAL's flush.
const lazySQL = `set_config('synchronous_commit', 'off', true)`

// freeSQL is the SET clause that frees a lease row: no holder (no take
// or check of a holder matches it), expired since now (the sweep's
// clock).
const freeSQL = `SET holder = '', expires_at = clock_timestamp()`

// takeSQL takes the lease on $1 for holder $2 if nobody holds it (it is
// free, or its holder let it expire) and no other Store queued for it;
// it returns a row only if it took it. Expiry is the database's clock,
// so replicas' clocks need not agree. A take of a held row waits for the
// holder's transaction (a commit that frees it) to end, and then sees
// the row as that transaction left it.
//
// The queue is one row beside the lease's, named "next " and the lease's
// name, holding the Store ($4) that waits for the lease next: a take
// that fails queues its Store there ($5 set: it will try again), unless
// another Store is queued and has not let its place expire ($6
// microseconds after its last try: an expired place is taken over, not
// renewed for a Store that may have died), and a take finds the lease
// free but not its own while another Store is queued. The queued Store's
// take frees the place. So a replica that waits for a lease is next once
// the holder lets it go, however often the holder's replica would take
// it again (issue 48), and a lease nobody waits for costs the same one
// statement. Queueing notifies wantChannel with the lease's name: a
// Store that kept the lease after an exchange lets it go (keep.go).
const takeSQL = `WITH ahead AS (
  SELECT FROM recall_leases WHERE name = 'next ' || $1 AND holder NOT IN ($4, '') AND expires_at > clock_timestamp()),
took AS (
  INSERT INTO recall_leases (name, holder, expires_at)
  SELECT $1, $2, clock_timestamp() + $3 * interval '1 microsecond' WHERE NOT EXISTS (SELECT FROM ahead)
  ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
  WHERE recall_leases.holder IN ('', excluded.holder) OR recall_leases.expires_at < clock_timestamp()
  RETURNING true AS ok, ` + lazySQL + `),
served AS (
  UPDATE recall_leases ` + freeSQL + ` WHERE name = 'next ' || $1 AND holder = $4 AND EXISTS (SELECT FROM took)),
queued AS (
  INSERT INTO recall_leases (name, holder, expires_at)
  SELECT 'next ' || $1, $4, clock_timestamp() + $6 * interval '1 microsecond' WHERE $5 AND NOT EXISTS (SELECT FROM took)
  ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
  WHERE recall_leases.holder IN ('', excluded.holder) OR recall_leases.expires_at < clock_timestamp()
  RETURNING ` + lazySQL + `, pg_notify('` + wantChannel + `', $1))
SELECT ok FROM took`

// unqueueSQL frees this Store's place in the lease's queue ($1 the
// lease's name, $2 the Store).
const unqueueSQL = `UPDATE recall_leases ` + freeSQL + ` WHERE name = 'next ' || $1 AND holder = $2 RETURNING ` + lazySQL

// queuePlace is how long a Store's place in a lease's queue outlives its
// last try: longer than the longest pause between two tries (15 ms, see
// pause) with a round trip on a loaded server. A Store that stops
// waiting drops its place (unqueue); one that died holds up the lease's
// holders for at most this long.
const queuePlace = time.Second

const renewSQL = `UPDATE recall_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
WHERE name = $1 AND holder = $2 RETURNING ` + lazySQL

// freeRowSQL frees the lease $1 if holder $2 holds it, in the caller's
// transaction, as durable as that is (a commit's).
const freeRowSQL = `UPDATE recall_leases ` + freeSQL + ` WHERE name = $1 AND holder = $2`

// releaseSQL is freeRowSQL on its own: it commits lazily.
const releaseSQL = freeRowSQL + ` RETURNING ` + lazySQL

// idleLease is how long a lease row stays free (or expired) before the
// sweep deletes it: a conversation idle for longer makes its row again
// (an insert) when it comes back.
const idleLease = time.Minute

// sweepSQL deletes the lease rows free or expired for longer than $1
// microseconds. A held row is renewed, so never that old.
const sweepSQL = `DELETE FROM recall_leases WHERE expires_at < clock_timestamp() - $1 * interval '1 microsecond'`

// Acquire waits until it holds the lease on name or ctx ends, checking
// again after a short, growing pause (2 ms to 10 ms, jittered) while
// another replica holds it. The lease is renewed at a third of
// Options.Lease until release; a holder that dies stops renewing, and the
// lease is free once it expires.
//
// A try that finds the lease held queues this Store for it (see
// takeSQL): once the holder lets it go, this Store takes it before the
// holder's Store may take it again.
func (s *Store) Acquire(ctx context.Context, name string) (release func(), err error) {
	var p pause
	for {
		release, ok, err := s.tryAcquire(ctx, name, true)
		if err != nil || ok {
			return release, err
		}
		if s.onWait != nil {
			s.onWait(name)
		}
		if err := p.wait(ctx); err != nil {
			s.unqueue(name)
			return nil, err
		}
	}
}

// pause is the wait between two tries of a lease another holder holds:
// 2 ms, growing to 10 ms, jittered. A Store waiting for a lease is next
// (takeSQL), so its pause is the lease's idle time at each hand-over:
// TestReplicasNoStaleHistory (eight clients, two replicas, one
// conversation) took 60.8 s with the queue and pauses growing to 50 ms,
// 26.4 s with 10 ms (15.5 s without the queue, where the replica changed
// 62 times in 1,000 turns instead of 461-588).
type pause struct{ d time.Duration }

func (p *pause) wait(ctx context.Context) error {
	if p.d == 0 {
		p.d = 2 * time.Millisecond
	}
	t := time.NewTimer(p.d/2 + rand.N(p.d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	p.d = min(2*p.d, 10*time.Millisecond)
	return nil
}

// While this Store is the sole writer (sole.go) no other process takes a
// lease, so TryAcquire holds one in memory, without a round trip. A Store
// making way for a joining one writes the leases it holds in memory into
// the table before it lets the newcomer in (publishLeases), from where
// they are renewed and released as any other. Every lease the Store
// holds, in memory or in the table, is in Store.held: a name held there
// is not taken again by this Store.

// heldLease is a lease this Store holds.
type heldLease struct {
	holder string
	// inTable: a row of recall_leases is (or is being) taken for it, and
	// renewed until release stops it (stop, done).
	inTable    bool
	stop, done chan struct{}
	// taken is when its row was taken (before the taking statement),
	// and joined the sole-writer lock's hold then (joinedSince).
	taken  time.Time
	joined uint64
	// keep is set while this Store keeps it (keep.go).
	keep *keeping
	// unkept: it may have been lost while held (the sole-writer lock's
	// connection broke, or a renewal found it gone): never kept, nor
	// trusted (keep.go). s.heldMu guards it.
	unkept bool
}

// TryAcquire takes the lease on name if nobody holds it (or its holder let
// it expire): in memory while this Store is the sole writer, else one
// round trip.
func (s *Store) TryAcquire(ctx context.Context, name string) (release func(), ok bool, err error) {
	return s.tryAcquire(ctx, name, false)
}

// tryAcquire is TryAcquire; queue: a try that fails queues this Store
// for the lease (the caller will try again).
func (s *Store) tryAcquire(ctx context.Context, name string, queue bool) (release func(), ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if h := s.claim(name); h != nil {
		var once sync.Once
		return func() { once.Do(func() { s.unclaim(name, h) }) }, true, nil
	}
	h := s.newHeld()
	reserved, inTable := s.reserve(name, h)
	if !reserved {
		return nil, false, nil
	}
	if !inTable {
		return s.releaser(name, h), true, nil
	}
	ok, err = s.take(ctx, name, h.holder, queue)
	if err != nil || !ok {
		s.unreserve(name, h)
		return nil, false, err
	}
	s.heldMu.Lock()
	s.renewing(name, h)
	s.heldMu.Unlock()
	return s.releaser(name, h), true, nil
}

// newHeld returns a lease to take, under a holder of its own.
func (s *Store) newHeld() *heldLease {
	return &heldLease{holder: fmt.Sprintf("%s/%d", s.holder, s.leases.Add(1))}
}

// reserve enters h in s.held under name, unless this Store holds name
// already (reserved false): in memory while this Store is the sole
// writer (it then holds the lease), otherwise as a row to take in the
// table (inTable), reserved while it is taken, as the Store may become
// sole meanwhile. A reservation whose take fails is undone (unreserve).
func (s *Store) reserve(name string, h *heldLease) (reserved, inTable bool) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if _, held := s.held[name]; held {
		return false, false
	}
	_, sole := s.sole.sole()
	h.inTable = !sole
	s.held[name] = h
	return true, h.inTable
}

// unreserve undoes reserve.
func (s *Store) unreserve(name string, h *heldLease) {
	s.heldMu.Lock()
	if s.held[name] == h {
		delete(s.held, name)
	}
	s.heldMu.Unlock()
}

// take takes the lease on name in the table for holder: one round trip.
// queue: if it cannot, this Store queues for it (see takeSQL).
func (s *Store) take(ctx context.Context, name, holder string, queue bool) (ok bool, err error) {
	us := s.lease.Microseconds()
	// A retry with the same holder takes a lease the first try took but
	// whose answer was lost.
	err = s.again(ctx, func() error {
		rows, err := s.pool.Query(ctx, takeSQL, name, holder, us, s.holder, queue, queuePlace.Microseconds())
		if err != nil {
			return wrap("lease "+name, err)
		}
		ok = rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil {
			return wrap("lease "+name, err)
		}
		return nil
	})
	return ok, err
}

// unqueue drops this Store's place in the queue for the lease on name,
// if it has one: it stopped waiting. If the database is away, the place
// expires on its own (queuePlace).
func (s *Store) unqueue(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, unqueueSQL, name, s.holder)
}

// renewing starts renewing h's row. s.heldMu is held.
func (s *Store) renewing(name string, h *heldLease) {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go s.renew(name, h.holder, h.stop, h.done)
}

// releaser returns the release of h: it forgets h, and frees its row if
// it has one (if the database is away, the row expires on its own).
func (s *Store) releaser(name string, h *heldLease) func() {
	var once sync.Once
	return func() { once.Do(func() { s.let(name, h, true) }) }
}

// let forgets h, stops renewing its row, and frees the row if it is in
// the table and del is set (a commit that freed it in its own
// transaction leaves del unset).
func (s *Store) let(name string, h *heldLease, del bool) {
	s.heldMu.Lock()
	if s.held[name] == h {
		delete(s.held, name)
	}
	stop, done, inTable := h.stop, h.done, h.inTable
	s.heldMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	if !inTable || !del {
		return // in memory only, or gone
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, releaseSQL, name, h.holder)
}

// An exchange's lease on its conversation (history.ExchangeLease) is one
// of the Store's leases, held in memory or in the table as any other, but
// taken without a round trip of its own: in memory while the Store is the
// sole writer (HoldLease, or the read), otherwise by the plan's read, in
// one batch with it (leased); and dropped by the commit that carries it
// (Change.Lease), in the commit's own transaction (see Commit), or kept past
// it (keep.go): the next exchange then claims it in memory.

// convLease is this Store's hold on an exchange's lease.
type convLease struct {
	s    *Store
	name string
	h    *heldLease
	once sync.Once
}

var _ history.LeaseHold = (*convLease)(nil)

// Release lets the lease go: a round trip if it is in the table.
func (c *convLease) Release() { c.once.Do(func() { c.s.let(c.name, c.h, true) }) }

// dropped forgets the lease after a commit freed its row.
func (c *convLease) dropped() { c.once.Do(func() { c.s.let(c.name, c.h, false) }) }

func (s *Store) newConvLease(k history.Key) *convLease {
	return &convLease{s: s, name: history.LeaseName(history.LeaseConversation, k), h: s.newHeld()}
}

// HoldLease takes l on k in memory, if this Store keeps k's lease
// (keep.go) and no exchange of its own holds it, or is the sole writer
// and nobody in it holds k's lease (history.ExchangeLeaser).
func (s *Store) HoldLease(k history.Key, l *history.ExchangeLease) bool {
	if l.Held() {
		return true
	}
	name := history.LeaseName(history.LeaseConversation, k)
	if h := s.claim(name); h != nil {
		l.Take(&convLease{s: s, name: name, h: h})
		return true
	}
	if _, sole := s.sole.sole(); !sole {
		return false
	}
	c := &convLease{s: s, name: name, h: s.newHeld()}
	reserved, inTable := s.reserve(c.name, c.h)
	if !reserved {
		return false
	}
	if inTable { // no longer sole: the read takes it
		s.unreserve(c.name, c.h)
		return false
	}
	l.Take(c)
	return true
}

// leaseTake is an exchange's lease a read takes in its round trip:
// either in the read's own statement (fast: fastTakeSQL), or with
// takeSQL sent before the read's statement, in one batch (one round
// trip, one implicit transaction); the read reads nothing unless it took
// the lease (ok).
type leaseTake struct {
	name, holder string
	fast, ok     bool
}

// leased runs read under l, an exchange's lease on k. With l nil or held,
// read runs alone. Otherwise read takes l: in memory while this Store is
// the sole writer (read then runs alone), else in read's own round trip
// (read gets the take): first in read's own statement (fast), which
// takes only a lease that is free and that nobody queued for, then, if
// that did not take it, with takeSQL in read's batch. While another
// holder holds the lease, leased waits a short, growing, jittered pause
// (as Acquire) and reads again: nothing read while another holds it is
// returned.
func (s *Store) leased(ctx context.Context, k history.Key, l *history.ExchangeLease, read func(*leaseTake) error) error {
	if l == nil || l.Held() {
		return read(nil)
	}
	c := s.newConvLease(k)
	var p pause
	fast := true
	for {
		if h := s.claim(c.name); h != nil {
			// Kept: claimed now, or once the exchange of this Store
			// that held it let it go.
			l.Take(&convLease{s: s, name: c.name, h: h})
			return read(nil)
		}
		reserved, inTable := s.reserve(c.name, c.h)
		switch {
		case reserved && !inTable:
			l.Take(c)
			return read(nil)
		case reserved:
			c.h.taken, c.h.joined = time.Now(), s.sole.joinedSince()
			take := &leaseTake{name: c.name, holder: c.h.holder, fast: fast}
			err := read(take)
			if take.ok {
				s.heldMu.Lock()
				s.renewing(c.name, c.h)
				s.heldMu.Unlock()
				if err != nil {
					c.Release() // the batch may have been rolled back, or not
					return err
				}
				l.Take(c)
				return nil
			}
			s.unreserve(c.name, c.h)
			if err != nil {
				if !take.fast {
					s.unqueue(c.name)
				}
				return err
			}
			if take.fast {
				fast = false // takeSQL, at once: it queues if it must
				continue
			}
		}
		if s.onWait != nil {
			s.onWait(c.name)
		}
		if err := p.wait(ctx); err != nil {
			s.unqueue(c.name)
			return err
		}
	}
}

// query sends sql with args alone, or with take after take's statement
// in one batch, its lease's name and holder appended to args (the
// leased variants of the reads), and calls read with sql's rows, unless
// take did not take the lease. read closes the rows. A fast take is
// sql's own (the taking variants): sql is sent alone, the lease's name,
// holder and length appended to args, and read sets take.ok.
func (s *Store) query(ctx context.Context, take *leaseTake, sql string, args []any, read func(pgx.Rows) error) error {
	if take != nil && take.fast {
		args = append(args, take.name, take.holder, s.lease.Microseconds())
	}
	if take == nil || take.fast {
		rows, err := s.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		return read(rows)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(takeSQL, take.name, take.holder, s.lease.Microseconds(), s.holder, true, queuePlace.Microseconds())
	b.Queue(sql, append(args, take.name, take.holder)...)
	br := conn.SendBatch(ctx, b)
	rows, err := br.Query()
	if err == nil {
		take.ok = rows.Next()
		rows.Close()
		err = rows.Err()
	}
	if err == nil {
		if rows, err = br.Query(); err == nil {
			if take.ok {
				err = read(rows)
			} else {
				rows.Close()
				err = rows.Err()
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// heldInTable returns the exchange's lease l as this Store holds it, and
// whether it is in the table (a commit then frees its row); nil if
// this Store does not hold it.
func (s *Store) heldInTable(l *history.ExchangeLease) (c *convLease, inTable bool) {
	c, _ = l.Hold().(*convLease)
	if c == nil || c.s != s {
		return nil, false
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return c, s.held[c.name] == c.h && c.h.inTable
}

// heldRow returns the lease on name this Store holds in the table, nil
// if it holds none there.
func (s *Store) heldRow(name string) *heldLease {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if h := s.held[name]; h != nil && h.inTable {
		return h
	}
	return nil
}

// freedBy records that a commit freed h's row, the lease on name, in its
// own statement: this Store no longer holds it, and h's release only
// stops renewing it (its holder matches no row), with no round trip.
func (s *Store) freedBy(name string, h *heldLease) {
	s.heldMu.Lock()
	if s.held[name] == h {
		delete(s.held, name)
	}
	h.inTable = false
	s.heldMu.Unlock()
}

// publishLeases writes the leases held in memory into the table, and
// renews them from then on: the sole-writer lock calls it when this Store
// stops being the sole writer, before a joining Store may go on. A lease
// it cannot take (the database away, or a row a dead holder left
// unexpired) stays in memory: the newcomer may then run that work too,
// which every lease's work tolerates (summaries and commits are checked
// against the stored head; a retention pass deletes what is due).
func (s *Store) publishLeases() {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for name, h := range s.held {
		if h.inTable {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ok, err := s.take(ctx, name, h.holder, false)
		cancel()
		if err == nil && ok {
			h.inTable = true
			s.renewing(name, h)
		}
	}
}

// renew extends the lease until stop is closed.
func (s *Store) renew(name, holder string, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), s.lease/3)
			_, _ = s.pool.Exec(ctx, renewSQL, name, holder, s.lease.Microseconds())
			cancel()
		}
	}
}

// fastTakeSQL takes an exchange's lease in its read's own statement (the
// read's CTEs before the read; $n the lease's name, $n+1 the holder, $n+2
// the lease's length in microseconds): one statement instead of the
// batch's two. It takes only a lease free in the statement's snapshot
// and not taken since, so that the read, on that snapshot, holds every
// commit of the lease's last holder (which freed the lease in its own
// transaction): the row as the snapshot sees it (l), free, is updated
// only if it is still that version (its ctid and xmin: a take or a free
// since made another, which the update then finds, rechecks and skips;
// either condition alone does it on PostgreSQL 15), and a row the
// snapshot does not see is inserted only if nobody made it meanwhile.
// Nobody may be queued for the lease (takeSQL's queue), this Store
// included: a lease held, expired, made or taken meanwhile, or queued
// for is left to takeSQL (see leased). got has a row if it took it.
func fastTakeSQL(n int) string {
	return fmt.Sprintf(`l AS (SELECT ctid AS rid, xmin AS x, holder FROM recall_leases WHERE name = $%[1]d),
queued AS (SELECT FROM recall_leases WHERE name = 'next ' || $%[1]d AND holder <> '' AND expires_at > clock_timestamp()),
took AS (
  UPDATE recall_leases SET holder = $%[2]d, expires_at = clock_timestamp() + $%[3]d * interval '1 microsecond'
  WHERE ctid = (SELECT rid FROM l) AND xmin = (SELECT x FROM l) AND holder = '' AND (SELECT holder FROM l) = ''
    AND NOT EXISTS (SELECT FROM queued)
  RETURNING `+lazySQL+`),
made AS (
  INSERT INTO recall_leases (name, holder, expires_at)
  SELECT $%[1]d, $%[2]d, clock_timestamp() + $%[3]d * interval '1 microsecond'
  WHERE NOT EXISTS (SELECT FROM l) AND NOT EXISTS (SELECT FROM queued)
  ON CONFLICT (name) DO NOTHING
  RETURNING `+lazySQL+`),
got AS (SELECT FROM took UNION ALL SELECT FROM made),
`, n, n+1, n+2)
}

// tookSQL is the condition on a taking read (fastTakeSQL) that it took
// the lease: it reads nothing otherwise.
const tookSQL = ` AND EXISTS (SELECT FROM got)`

// tookRowSQL is the row a taking read answers if it took the lease: seq
// -1 (see scanTail), cols the read's columns after the first three.
func tookRowSQL(cols string) string {
	return "\nUNION ALL\nSELECT -1::bigint, NULL::bytea, NULL::bytea" + cols + " FROM got"
}

// flag is what a read that takes t in its own statement (fast) sets
// when it took it (see scanTail); nil for any other read.
func (t *leaseTake) flag() *bool {
	if t == nil || !t.fast {
		return nil
	}
	return &t.ok
}
