package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallproxy/recall/fleet"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated returns a pool on the database at url once pgstore.Open has
// brought its schema to the newest version, as a replica's would be.
func migrated(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return pool(t, url)
}

// pool opens a pool of its own on url, as each replica has.
func pool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// replica is a Fleet joined in a test, with its heartbeat driven by the
// test (tick) and each heartbeat's end heard on beats.
type replica struct {
	*fleet.Fleet
	tick  chan time.Time
	beats chan error
}

// join joins a replica reached at url to the fleet on p; o's Tick and
// OnBeat are the replica's own. It closes at the test's end.
func join(t *testing.T, p *pgxpool.Pool, url string, o fleet.Options) *replica {
	t.Helper()
	r := &replica{tick: make(chan time.Time), beats: make(chan error, 64)}
	o.Tick, o.OnBeat = r.tick, func(err error) { r.beats <- err }
	f, err := fleet.Join(context.Background(), p, fleet.Member{URL: url}, o)
	if err != nil {
		t.Fatal(err)
	}
	<-r.beats // Join's own
	r.Fleet = f
	t.Cleanup(func() { f.Close() })
	return r
}

// beat runs one heartbeat of r and returns its error.
func (r *replica) beat(t *testing.T) error {
	t.Helper()
	r.tick <- time.Now()
	select {
	case err := <-r.beats:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat within 10s")
		return nil
	}
}

// urls are the URLs of r's members.
func (r *replica) urls() []string {
	var out []string
	for _, m := range r.Members() {
		out = append(out, m.URL)
	}
	return out
}

func key(i int) string { return fmt.Sprintf("tenant\x00conversation-%d", i) }

// TestMembersSeeEachOtherAndAgree: two replicas on one database see
// each other after a heartbeat, name the same owner for each of 1,000
// conversations, and each owns a fair share of them.
func TestMembersSeeEachOtherAndAgree(t *testing.T) {
	url := pgtest.DB(t)
	p := migrated(t, url)
	a := join(t, p, "http://a.example:8080", fleet.Options{})
	if got := a.urls(); len(got) != 1 || got[0] != "http://a.example:8080" {
		t.Fatalf("alone: got members %v, want itself", got)
	}
	b := join(t, pool(t, url), "http://b.example:8080", fleet.Options{})
	if err := a.beat(t); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{a, b} {
		if got := r.urls(); len(got) != 2 {
			t.Fatalf("%s: got members %v, want both", r.ID(), got)
		}
	}
	owned := map[string]int{}
	for i := range 1000 {
		ua, selfA := a.Owner(key(i))
		ub, selfB := b.Owner(key(i))
		if ua != ub || selfA == selfB {
			t.Fatalf("key %d: a says %s (self %v), b says %s (self %v): want one owner, itself to one of them", i, ua, selfA, ub, selfB)
		}
		if (ua == "http://a.example:8080") != selfA {
			t.Fatalf("key %d: a says %s, self %v", i, ua, selfA)
		}
		owned[ua]++
	}
	for u, n := range owned {
		if n < 350 || n > 650 {
			t.Errorf("%s owns %d of 1000 keys, want 350 to 650", u, n)
		}
	}
	if len(owned) != 2 {
		t.Errorf("owners %v, want both replicas", owned)
	}
}

// TestSilentMemberDropsOut: a replica that stops stamping its row drops
// out of the others' members once its stamp is Dead old by the
// database's clock; its conversations go to the replicas left.
func TestSilentMemberDropsOut(t *testing.T) {
	url := pgtest.DB(t)
	p := migrated(t, url)
	const dead = time.Second
	a := join(t, p, "http://a.example:8080", fleet.Options{Dead: dead})
	b := join(t, pool(t, url), "http://b.example:8080", fleet.Options{Dead: dead}) // never ticked again: silent
	if err := a.beat(t); err != nil {
		t.Fatal(err)
	}
	if got := a.urls(); len(got) != 2 {
		t.Fatalf("got members %v, want both (the test's first heartbeat came more than %s after b joined)", got, dead)
	}
	stolen := -1
	for i := range 1000 {
		if _, self := b.Owner(key(i)); self {
			stolen = i
			break
		}
	}
	if stolen < 0 {
		t.Fatal("b owns none of 1000 keys")
	}
	// a's heartbeats, paced, until b drops out.
	pace := time.NewTicker(25 * time.Millisecond)
	defer pace.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for len(a.urls()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("b still a member 10s after it went silent (dead after %s): %v", dead, a.urls())
		}
		<-pace.C
		if err := a.beat(t); err != nil {
			t.Fatal(err)
		}
	}
	if u, self := a.Owner(key(stolen)); !self {
		t.Errorf("key %d, b's: a names %s as its owner once b dropped out, want itself", stolen, u)
	}
}

// TestCloseRemovesTheRow: a replica that closes deletes its row at
// once, and leaves the others' members at their next heartbeat.
func TestCloseRemovesTheRow(t *testing.T) {
	url := pgtest.DB(t)
	p := migrated(t, url)
	a := join(t, p, "http://a.example:8080", fleet.Options{})
	b := join(t, pool(t, url), "http://b.example:8080", fleet.Options{})
	if err := a.beat(t); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := p.QueryRow(context.Background(), `SELECT count(*) FROM recall_replicas WHERE id = $1`, b.ID()).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("got %d rows of the closed replica, want 0", rows)
	}
	if err := a.beat(t); err != nil {
		t.Fatal(err)
	}
	if got := a.urls(); len(got) != 1 || got[0] != "http://a.example:8080" {
		t.Fatalf("after b closed: got members %v, want a alone", got)
	}
	if err := b.Close(); err != nil {
		t.Errorf("a second Close: %v, want the first's nil", err)
	}
}

// TestHeartbeatFailureKeepsTheMembers: while the database is away, the
// heartbeat fails and the members stay as last read (conversations keep
// their owners); a warning says so once a minute, not once a heartbeat.
func TestHeartbeatFailureKeepsTheMembers(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	p := migrated(t, url)
	var logs syncBuffer
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := join(t, p, "http://a.example:8080", fleet.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clock})
	b := join(t, pool(t, url), "http://b.example:8080", fleet.Options{})
	if err := a.beat(t); err != nil {
		t.Fatal(err)
	}
	want := make([]string, 1000)
	for i := range want {
		want[i], _ = a.Owner(key(i))
	}
	b.Close()
	srv.Stop()
	for range 3 {
		if err := a.beat(t); err == nil {
			t.Fatal("a heartbeat succeeded with the database stopped")
		}
	}
	for i := range want {
		if got, _ := a.Owner(key(i)); got != want[i] {
			t.Fatalf("key %d: owner %s once heartbeats failed, want %s as before", i, got, want[i])
		}
	}
	if n := strings.Count(logs.String(), "heartbeat failed"); n != 1 {
		t.Fatalf("got %d warnings for 3 failed heartbeats in a minute, want 1:\n%s", n, logs.String())
	}
	mu.Lock()
	now = now.Add(61 * time.Second)
	mu.Unlock()
	if err := a.beat(t); err == nil {
		t.Fatal("a heartbeat succeeded with the database stopped")
	}
	if n := strings.Count(logs.String(), "heartbeat failed"); n != 2 {
		t.Fatalf("got %d warnings once a minute passed, want 2:\n%s", n, logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the heartbeat goroutine's
// writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRowsAnHourOldAreDeleted: the row of a replica killed an hour ago
// (it never deleted it) goes at a heartbeat; one a minute old stays
// (not a member: it is past Dead).
func TestRowsAnHourOldAreDeleted(t *testing.T) {
	url := pgtest.DB(t)
	p := migrated(t, url)
	ctx := context.Background()
	for _, row := range []struct{ id, age string }{{"killed-long-ago", "2 hours"}, {"killed-lately", "1 minute"}} {
		if _, err := p.Exec(ctx, `INSERT INTO recall_replicas (id, url, seen_at) VALUES ($1, 'http://gone:8080', now() - $2::interval)`, row.id, row.age); err != nil {
			t.Fatal(err)
		}
	}
	a := join(t, p, "http://a.example:8080", fleet.Options{})
	if got := a.urls(); len(got) != 1 {
		t.Fatalf("got members %v, want a alone", got)
	}
	var ids []string
	rows, err := p.Query(ctx, `SELECT id FROM recall_replicas WHERE id <> $1 ORDER BY id`, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "killed-lately" {
		t.Fatalf("rows left %v, want killed-lately alone", ids)
	}
}
