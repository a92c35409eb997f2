package pgstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// takeSQL takes the lease on $1 for holder $2 if nobody holds it or its
// holder let it expire; it returns a row only if it took it. Expiry is
// the database's clock, so replicas' clocks need not agree.
const takeSQL = `INSERT INTO recall_leases (name, holder, expires_at)
VALUES ($1, $2, clock_timestamp() + $3 * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE recall_leases.expires_at < clock_timestamp() OR recall_leases.holder = excluded.holder
RETURNING true`

const renewSQL = `UPDATE recall_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
WHERE name = $1 AND holder = $2`

const releaseSQL = `DELETE FROM recall_leases WHERE name = $1 AND holder = $2`

// Acquire waits until it holds the lease on name or ctx ends, checking
// again after a short, growing pause (2 ms to 50 ms, jittered) while
// another replica holds it. The lease is renewed at a third of
// Options.Lease until release; a holder that dies stops renewing, and the
// lease is free once it expires.
func (s *Store) Acquire(ctx context.Context, name string) (release func(), err error) {
	wait := 2 * time.Millisecond
	for {
		release, ok, err := s.TryAcquire(ctx, name)
		if err != nil || ok {
			return release, err
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
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
}

// TryAcquire takes the lease on name if nobody holds it (or its holder let
// it expire): in memory while this Store is the sole writer, else one
// round trip.
func (s *Store) TryAcquire(ctx context.Context, name string) (release func(), ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	h := &heldLease{holder: fmt.Sprintf("%s/%d", s.holder, s.leases.Add(1))}
	s.heldMu.Lock()
	if _, held := s.held[name]; held {
		s.heldMu.Unlock()
		return nil, false, nil
	}
	_, sole := s.sole.sole()
	// Reserved while the row is taken: the Store may become sole meanwhile.
	h.inTable = !sole
	s.held[name] = h
	s.heldMu.Unlock()
	if sole {
		return s.releaser(name, h), true, nil
	}
	ok, err = s.take(ctx, name, h.holder)
	if err != nil || !ok {
		s.heldMu.Lock()
		delete(s.held, name)
		s.heldMu.Unlock()
		return nil, false, err
	}
	s.heldMu.Lock()
	s.renewing(name, h)
	s.heldMu.Unlock()
	return s.releaser(name, h), true, nil
}

// take takes the lease on name in the table for holder: one round trip.
func (s *Store) take(ctx context.Context, name, holder string) (ok bool, err error) {
	us := s.lease.Microseconds()
	// A retry with the same holder takes a lease the first try took but
	// whose answer was lost.
	err = s.again(ctx, func() error {
		rows, err := s.pool.Query(ctx, takeSQL, name, holder, us)
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

// renewing starts renewing h's row. s.heldMu is held.
func (s *Store) renewing(name string, h *heldLease) {
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go s.renew(name, h.holder, h.stop, h.done)
}

// releaser returns the release of h: it forgets h, and deletes its row if
// it has one (if the database is away, the row expires on its own).
func (s *Store) releaser(name string, h *heldLease) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.heldMu.Lock()
			delete(s.held, name)
			stop, done := h.stop, h.done
			s.heldMu.Unlock()
			if stop == nil {
				return // in memory only
			}
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = s.pool.Exec(ctx, releaseSQL, name, h.holder)
		})
	}
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
		ok, err := s.take(ctx, name, h.holder)
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
