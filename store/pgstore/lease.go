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

// TryAcquire takes the lease on name if nobody holds it (or its holder let
// it expire): one round trip.
func (s *Store) TryAcquire(ctx context.Context, name string) (release func(), ok bool, err error) {
	holder := fmt.Sprintf("%s/%d", s.holder, s.leases.Add(1))
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
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, nil
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go s.renew(name, holder, stop, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			<-done
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// If the database is away, the lease expires on its own.
			_, _ = s.pool.Exec(ctx, releaseSQL, name, holder)
		})
	}, true, nil
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
