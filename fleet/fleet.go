// Package fleet is the replicas of Recall that share one PostgreSQL
// database, and which of them owns a conversation.
//
// A replica joins with an id of its own and the base URL at which the
// others reach it (replica_url): a row of recall_replicas that it
// upserts every second, stamped with the database's clock, so that the
// replicas' clocks need not agree. The same statement reads the rows
// stamped within the last three seconds: the live members. A replica
// that stops deletes its row; one killed drops out once its stamp is
// three seconds old, and its row is deleted after an hour.
//
// Owner names a conversation's owner among the live members by
// rendezvous (highest random weight) hashing: replicas that see the same
// members name the same owner, and a member joining or leaving moves
// only the conversations it takes or held, about one in N. Ownership is
// where requests are sent, never a lock: for a heartbeat or two after a
// change two replicas may each think another owns a conversation, and
// what keeps a conversation's history whole then is the store's lease
// (package pgstore), as it is when a balancer sends a conversation's
// requests anywhere.
package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Member is a replica: its id, unique to its process, and the base URL
// at which the other replicas reach it ("http://host:port").
type Member struct {
	ID, URL string
}

// Options tune a Fleet. The zero value takes every default.
type Options struct {
	// Every is how often a replica stamps its row and reads the live
	// members (the heartbeat). Default 1s.
	Every time.Duration
	// Dead is how long a member may go unstamped, by the database's
	// clock, before the others drop it. Default 3s: three heartbeats.
	Dead time.Duration
	// Tick, if set, runs a heartbeat on each value it delivers instead
	// of every Every: for tests, which drive the heartbeat themselves.
	Tick <-chan time.Time
	// OnBeat, if set, is called at the end of each heartbeat (the
	// first, in Join, included), once its members or its failure are
	// noted, from the goroutine that ran it, with its error (nil: the
	// members were read). It must not block. For tests.
	OnBeat func(error)
	// Logger receives a warning when heartbeats fail (at most one a
	// minute) and a line when the members change. Default: discarded.
	Logger *slog.Logger
	// Now is the clock that spaces the failure warnings. Default time.Now.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.Every <= 0 {
		o.Every = time.Second
	}
	if o.Dead <= 0 {
		o.Dead = 3 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Fleet is this replica's membership in the fleet, and its view of the
// live members. Owner is safe for concurrent use and does not allocate;
// the view changes with each heartbeat.
type Fleet struct {
	pool *pgxpool.Pool
	self Member
	o    Options
	view atomic.Pointer[view]

	stop      context.CancelFunc // ends the heartbeat goroutine and a beat in flight
	done      chan struct{}      // closed when the heartbeat goroutine returned
	closeOnce sync.Once
	closeErr  error

	// Owned by the heartbeat goroutine (by Join before it starts).
	beats    int
	warnedAt time.Time // when a failed heartbeat was last logged
	failing  bool      // the last heartbeat failed
}

// pruneEvery is how many heartbeats go between deletions of the rows of
// replicas gone for an hour: with the default Every, once a minute.
const pruneEvery = 60

// Join adds self to the fleet of replicas on the database pool connects
// to (whose schema has recall_replicas: pgstore.Open migrates it), reads
// the live members, and keeps doing both every o.Every until Close. An
// empty self.ID is replaced by a new one, unique to this process (ID
// returns it). It fails if self.URL is empty or the first heartbeat
// fails.
func Join(ctx context.Context, pool *pgxpool.Pool, self Member, o Options) (*Fleet, error) {
	if self.URL == "" {
		return nil, errors.New("fleet: join: no URL to be reached at")
	}
	if self.ID == "" {
		self.ID = NewID()
	}
	o.setDefaults()
	f := &Fleet{pool: pool, self: self, o: o, done: make(chan struct{})}
	f.view.Store(&view{})
	err := f.beat(ctx)
	if f.o.OnBeat != nil {
		f.o.OnBeat(err)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: join: %w", err)
	}
	hctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	go f.run(hctx)
	return f, nil
}

// NewID returns an id unique to this process among the replicas: its
// host, its pid and 48 random bits.
func NewID() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// ID returns this replica's id.
func (f *Fleet) ID() string { return f.self.ID }

// Members returns the live members as the last heartbeat that read them
// found them, ordered by id; this replica among them.
func (f *Fleet) Members() []Member {
	v := f.view.Load()
	out := make([]Member, len(v.members))
	for i, m := range v.members {
		out[i] = m.Member
	}
	return out
}

// Close stops the heartbeat and deletes this replica's row, so that the
// others stop sending it requests at their next heartbeat rather than
// once its stamp is Dead old. Calls after the first return its result.
func (f *Fleet) Close() error {
	f.closeOnce.Do(func() {
		f.stop()
		<-f.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := f.pool.Exec(ctx, `DELETE FROM recall_replicas WHERE id = $1`, f.self.ID); err != nil {
			f.closeErr = fmt.Errorf("fleet: leave: %w", err)
		}
	})
	return f.closeErr
}

// run beats on every tick until ctx ends.
func (f *Fleet) run(ctx context.Context) {
	defer close(f.done)
	tick := f.o.Tick
	if tick == nil {
		t := time.NewTicker(f.o.Every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			err := f.beat(ctx)
			if err != nil && ctx.Err() == nil {
				f.failed(err)
			}
			if f.o.OnBeat != nil {
				f.o.OnBeat(err)
			}
		}
	}
}

// heartbeat stamps this replica's row with the database's clock and
// reads the live members in one statement. The read's snapshot does not
// see the upsert, so this replica's row comes from the upsert's RETURNING.
// With $4 it deletes the rows of replicas unseen for an hour too (never
// this replica's: a statement must not change one row twice).
const heartbeat = `WITH beat AS (
	INSERT INTO recall_replicas (id, url, seen_at) VALUES ($1, $2, clock_timestamp())
	ON CONFLICT (id) DO UPDATE SET url = excluded.url, seen_at = excluded.seen_at
	RETURNING id, url
), gone AS (
	DELETE FROM recall_replicas
	WHERE $4 AND id <> $1 AND seen_at < clock_timestamp() - interval '1 hour'
)
SELECT id, url FROM beat
UNION ALL
SELECT id, url FROM recall_replicas
WHERE id <> $1 AND seen_at > clock_timestamp() - $3::float8 * interval '1 second'`

// beat runs one heartbeat and, if it read the members, makes them the
// view. A failed one keeps the view it had.
func (f *Fleet) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.o.Dead)
	defer cancel()
	prune := f.beats%pruneEvery == 0
	f.beats++
	rows, err := f.pool.Query(ctx, heartbeat, f.self.ID, f.self.URL, f.o.Dead.Seconds(), prune)
	if err != nil {
		return err
	}
	var members []Member
	for rows.Next() {
		var m Member
		if err := rows.Scan(&m.ID, &m.URL); err != nil {
			rows.Close()
			return err
		}
		members = append(members, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	if f.failing {
		f.failing = false
		f.o.Logger.Info("fleet: heartbeat works again", "members", len(members))
	}
	if old := f.view.Load(); !old.same(members) {
		f.view.Store(newView(members, f.self.ID))
		urls := make([]string, len(members))
		for i, m := range members {
			urls[i] = m.URL
		}
		f.o.Logger.Info("fleet: members changed", "members", len(members), "urls", urls)
	}
	return nil
}

// failed notes a failed heartbeat: the view stays as the last one read,
// and a warning says so, at most once a minute.
func (f *Fleet) failed(err error) {
	f.failing = true
	now := f.o.Now()
	if !f.warnedAt.IsZero() && now.Sub(f.warnedAt) < time.Minute {
		return
	}
	f.warnedAt = now
	f.o.Logger.Warn("fleet: heartbeat failed: requests are routed by the last members read",
		"members", len(f.view.Load().members), "error", err.Error())
}
