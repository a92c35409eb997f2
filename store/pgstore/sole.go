package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/recallproxy/recall/history"
)

// The sole-writer lock lets a Recall process that is the only one writing
// the database trust its window cache without reading a conversation's
// head first (history.SoleWriter): nobody else can have changed it.
//
// Every Store holds a PostgreSQL session-level advisory lock on one key,
// on a connection of its own (not the pool's), for as long as it is open:
//
//   - exclusively while it is alone: it is then the sole writer;
//   - shared once another Store opened: none trusts its cache alone.
//
// A Store opening tries the lock exclusively. If another holds it, it
// NOTIFYs soleChannel and waits for the shared lock, sending the notice
// again every joinRetry until JoinTimeout. The sole Store LISTENs on its
// lock connection; on a notice it stops trusting its cache, takes the
// shared lock beside the exclusive one, and releases the exclusive one:
// the newcomer's Open returns, and its first write comes, only after the
// sole Store stopped trusting. A Store holding the shared lock tries the
// exclusive one every UpgradeEvery (it succeeds when no other Store holds
// the shared one) and then trusts its cache again, each entry once its
// head has been read again (the epoch changed: see history.SoleWriter).
//
// A Store writes (Commit, Delete) only while it holds the lock, shared or
// exclusive: no other Store trusts its cache meanwhile. If the lock
// connection breaks (the server then releases its locks), the Store stops
// trusting at once, connects again, and its writes wait for the lock (at
// most 5s, then fail as unavailable). What this leaves: a write
// already under way when the connection broke may land after another
// Store took the lock alone and read that conversation's head. Every
// commit is still checked against the head it was planned from
// (history.Change.Base, Version), so a stale window costs a conflict and
// a rebase, never a lost or doubled turn.
const (
	// soleKey is the advisory lock's key (SoleLockKey).
	soleKey = SoleLockKey
	// soleChannel is the LISTEN/NOTIFY channel a joining Store calls on.
	soleChannel = "recall_sole_join"
	// joinRetry is how long a joining Store waits for the shared lock
	// before it sends its notice again (a sole Store that was upgrading
	// when the first came ignores it).
	joinRetry = time.Second
	// joinWait bounds how long a write waits for the lock (see ready):
	// a database that is down fails the request soon.
	joinWait = 5 * time.Second
)

// SoleLockKey is the key of the advisory lock every Store holds on the
// database ("recall" in ASCII, then 1): pg_locks shows it as locktype
// advisory, classid 0x72656361, objid 0x6c6c0001, in mode ExclusiveLock
// on the sole writer's connection, ShareLock on each replica's otherwise.
const SoleLockKey int64 = 0x726563616c6c0001

// soleLock is a Store's side of the sole-writer lock.
type soleLock struct {
	cfg    *pgx.ConnConfig
	join   time.Duration
	ticks  <-chan time.Time
	stopTk func()
	onSole func(bool)
	// yielding, if set, runs when this Store stops being the sole writer
	// for a joining Store, before the newcomer may go on.
	yielding func()
	// want, if set, runs with the name of a lease another Store queued
	// for (keep.go's wantChannel).
	want func(name string)
	// lost, if set, runs when the lock connection breaks.
	lost func()
	// changed, if set, runs after the Store starts or stops being the
	// sole writer (set).
	changed func()

	// unjoined is nil while the lock is held (shared or exclusive), and
	// otherwise a channel closed when it is held again: writes wait for
	// it (see ready).
	unjoined atomic.Pointer[chan struct{}]
	// joins counts the times the lock was held again (joinedSince).
	joins atomic.Uint64

	// state is 0 while this Store does not trust its cache, the current
	// epoch while it does. Only the run goroutine (or Open, before it
	// starts) writes it.
	state  atomic.Uint64
	epochs uint64

	conn    *pgx.Conn // the lock connection; owned by run
	started bool      // run was started (close then waits for it)
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex // serialises onSole calls
}

func newSoleLock(cfg *pgx.ConnConfig, o Options) *soleLock {
	c := cfg.Copy()
	c.Tracer = nil // the lock's statements are not the requests'
	l := &soleLock{cfg: c, join: o.JoinTimeout, ticks: o.UpgradeTicks, onSole: o.OnSole, done: make(chan struct{})}
	if l.ticks == nil {
		t := time.NewTicker(o.UpgradeEvery)
		l.ticks, l.stopTk = t.C, t.Stop
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.unjoin()
	return l
}

// unjoin marks the lock not held: writes wait.
func (l *soleLock) unjoin() {
	if l.unjoined.Load() == nil {
		ch := make(chan struct{})
		l.unjoined.Store(&ch)
	}
}

// joined marks the lock held: waiting writes go on.
func (l *soleLock) joined() {
	if l.unjoined.Load() != nil {
		l.joins.Add(1) // before: whoever sees the lock held sees the new count
	}
	if ch := l.unjoined.Swap(nil); ch != nil {
		close(*ch)
	}
}

// joinedSince returns the number of the lock's current hold (it counts
// each time the lock is held again), 0 while it is not held. A number
// that is still the current one later means the lock was held all along:
// the database did not restart meanwhile, nor could another Store hold it
// alone (keep.go).
func (l *soleLock) joinedSince() uint64 {
	if l.unjoined.Load() != nil {
		return 0
	}
	return l.joins.Load()
}

// ready waits until this Store holds the lock: a Store writes only while
// it does, so that no other Store can trust its cache meanwhile. It waits
// at most joinWait or JoinTimeout, the shorter (the lock connection being
// replaced), then fails with history.ErrUnavailable.
func (l *soleLock) ready(ctx context.Context) error {
	ch := l.unjoined.Load()
	if ch == nil {
		return nil
	}
	t := time.NewTimer(min(l.join, joinWait))
	defer t.Stop()
	select {
	case <-*ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("not joined to the other replicas (the sole-writer lock's connection is down): %w", history.ErrUnavailable)
	}
}

// sole reports the current epoch, and whether this Store trusts its cache.
func (l *soleLock) sole() (uint64, bool) {
	e := l.state.Load()
	return e, e != 0
}

func (l *soleLock) set(sole bool) {
	if sole == (l.state.Load() != 0) {
		return
	}
	if sole {
		l.epochs++
		l.state.Store(l.epochs)
	} else {
		l.state.Store(0)
	}
	if l.onSole != nil {
		l.mu.Lock()
		l.onSole(sole)
		l.mu.Unlock()
	}
	if l.changed != nil {
		l.changed()
	}
}

// open connects the lock connection and takes the lock, exclusively if it
// can, shared otherwise (after asking the sole Store to make way).
func (l *soleLock) open(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	if err := l.take(ctx, conn); err != nil {
		conn.Close(context.Background())
		return err
	}
	l.conn = conn
	l.joined()
	return nil
}

func (l *soleLock) take(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, "LISTEN "+soleChannel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+wantChannel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", joinRetry.Milliseconds())); err != nil {
		return err
	}
	deadline := time.Now().Add(l.join)
	for {
		var alone bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, soleKey).Scan(&alone); err != nil {
			return err
		}
		if alone {
			l.set(true)
			return nil
		}
		if _, err := conn.Exec(ctx, `SELECT pg_notify($1, '')`, soleChannel); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1)`, soleKey)
		if err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("join: another Recall process holds the database alone and did not make way within %s: %w",
				l.join, history.ErrUnavailable)
		}
	}
}

// start starts run.
func (l *soleLock) start() {
	l.started = true
	go l.run()
}

// run answers join notices while sole, tries to become sole again every
// tick while shared, and connects again when the lock connection breaks,
// until close.
func (l *soleLock) run() {
	defer close(l.done)
	wait := 100 * time.Millisecond
	for l.ctx.Err() == nil {
		if l.conn == nil {
			if err := l.open(l.ctx); err != nil {
				select {
				case <-l.ctx.Done():
				case <-time.After(wait):
				}
				wait = min(2*wait, time.Second)
				continue
			}
			wait = 100 * time.Millisecond
		}
		n, ticked, err := l.wait()
		switch {
		case l.ctx.Err() != nil:
			return
		case err != nil && !ticked:
			l.broken()
			continue
		}
		if n != nil && n.Channel == wantChannel {
			if l.want != nil {
				go l.want(n.Payload) // it frees the lease: a round trip
			}
			n = nil
		}
		if n != nil && n.PID != l.conn.PgConn().PID() {
			if _, sole := l.sole(); sole {
				if err := l.yield(); err != nil {
					l.broken()
					continue
				}
			}
		}
		if ticked {
			if _, sole := l.sole(); !sole {
				if err := l.upgrade(); err != nil {
					l.broken()
				}
			}
		}
	}
}

// wait waits for a notice, or (while shared) for the next tick.
func (l *soleLock) wait() (n *pgconn.Notification, ticked bool, err error) {
	ctx, cancel := context.WithCancel(l.ctx)
	var tick atomic.Bool
	helper := make(chan struct{})
	go func() {
		defer close(helper)
		if _, sole := l.sole(); sole {
			<-ctx.Done()
			return
		}
		select {
		case <-l.ticks:
			tick.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	n, err = l.conn.WaitForNotification(ctx)
	cancel()
	<-helper
	return n, tick.Load(), err
}

// yield makes way for a joining Store: stop trusting, write the leases
// held in memory into the table (yielding), then hold the lock shared,
// then release the exclusive hold.
func (l *soleLock) yield() error {
	l.set(false)
	if l.yielding != nil {
		l.yielding()
	}
	if _, err := l.conn.Exec(l.ctx, `SELECT pg_advisory_lock_shared($1)`, soleKey); err != nil {
		return err
	}
	_, err := l.conn.Exec(l.ctx, `SELECT pg_advisory_unlock($1)`, soleKey)
	return err
}

// upgrade takes the lock exclusively if no other Store holds it, and then
// trusts the cache again (in a new epoch).
func (l *soleLock) upgrade() error {
	var alone bool
	if err := l.conn.QueryRow(l.ctx, `SELECT pg_try_advisory_lock($1)`, soleKey).Scan(&alone); err != nil || !alone {
		return err
	}
	if _, err := l.conn.Exec(l.ctx, `SELECT pg_advisory_unlock_shared($1)`, soleKey); err != nil {
		return err
	}
	l.set(true)
	return nil
}

// broken holds writes, stops trusting and drops the lock connection (run
// connects again). Writes are held first: whatever sees the Store stop
// trusting (OnSole) sees its writes wait for the lock.
func (l *soleLock) broken() {
	l.unjoin()
	l.set(false)
	if l.lost != nil {
		l.lost()
	}
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
}

// close stops run and releases the lock (closing its connection).
func (l *soleLock) close() {
	l.cancel()
	if l.started {
		<-l.done
	}
	if l.stopTk != nil {
		l.stopTk()
	}
	l.set(false)
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Released before the connection closes, so that another Store
		// can take the lock as soon as close returns.
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		l.conn.Close(ctx)
		l.conn = nil
	}
}
