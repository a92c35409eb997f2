package proxy_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/fleet"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
)

var _ proxy.Fleet = (*fleet.Fleet)(nil)

// fleetSlot is a replica's proxy.Fleet, joined once its server listens
// (its URL is its member's): until then every conversation is its own.
type fleetSlot struct{ f atomic.Pointer[fleet.Fleet] }

func (s *fleetSlot) Owner(key string) (string, bool) {
	if f := s.f.Load(); f != nil {
		return f.Owner(key)
	}
	return "", true
}

func (s *fleetSlot) ID() string {
	if f := s.f.Load(); f != nil {
		return f.ID()
	}
	return ""
}

// pgReplica is a Recall server on a shared PostgreSQL database, in front
// of a fake upstream of its own, in a fleet whose heartbeat the test
// drives.
type pgReplica struct {
	*harness
	fleet *fleet.Fleet
	tick  chan time.Time
	beats chan error
}

// pgReplicas starts n replicas on the database at url, each joined to
// the fleet, and beats them until each sees all n.
func pgReplicas(t *testing.T, url string, n int) []*pgReplica {
	t.Helper()
	rs := make([]*pgReplica, n)
	for i := range rs {
		slot := &fleetSlot{}
		r := &pgReplica{tick: make(chan time.Time), beats: make(chan error, 16)}
		r.harness = newHarness(t, e2etest.Options{PostgreSQL: url, Proxy: func(c *proxy.Config) { c.Fleet = slot }})
		pool := r.Backing.(*pgstore.Store).Pool()
		f, err := fleet.Join(context.Background(), pool, fleet.Member{URL: r.URL},
			fleet.Options{Tick: r.tick, OnBeat: func(err error) { r.beats <- err }})
		if err != nil {
			t.Fatal(err)
		}
		<-r.beats
		t.Cleanup(func() { f.Close() }) // before the harness's store closes
		slot.f.Store(f)
		r.fleet = f
		rs[i] = r
	}
	for _, r := range rs {
		r.tick <- time.Now()
		if err := <-r.beats; err != nil {
			t.Fatal(err)
		}
		if got := len(r.fleet.Members()); got != n {
			t.Fatalf("%s sees %d members, want %d", r.URL, got, n)
		}
	}
	return rs
}

// TestReplicasForwardToTheOwner: two replicas on one PostgreSQL
// database, each with replica forwarding on; a client alternates one
// conversation's turns between them, streamed and not. Every answer is
// right, the stored history holds every turn once and in order, and
// the owner served them all: its upstream got every request, each with
// the whole history before it, the other replica's got none and it
// counted each request it forwarded.
func TestReplicasForwardToTheOwner(t *testing.T) {
	rs := pgReplicas(t, pgtest.DB(t), 2)
	const turns = 8
	var want []string
	for i := range turns {
		text := fmt.Sprintf("alternating turn %d", i)
		stream := i%4 >= 2 // each replica gets both kinds
		r := rs[i%2].Post("/v1/chat/completions", key, "fwd", e2etest.ChatBody(text, stream))
		if r.Status != 200 || answerText(r.Body) != "echo: "+text {
			t.Fatalf("turn %d on replica %d: %d %s", i, i%2, r.Status, r.Body)
		}
		want = append(want, "user:"+text, "assistant:echo: "+text)
	}
	owner, other := rs[0], rs[1]
	if owner.Up.Count() == 0 {
		owner, other = other, owner
	}
	if owner.Up.Count() != turns || other.Up.Count() != 0 {
		t.Fatalf("upstream calls: %d and %d, want %d on the owner's alone", owner.Up.Count(), other.Up.Count(), turns)
	}
	for i, rq := range owner.Up.Requests() {
		if got := len(rq.Messages); got != 2*i+1 {
			t.Errorf("turn %d: the owner's upstream got %d messages, want %d (the whole history)", i, got, 2*i+1)
		}
	}
	if got := other.Metric(metricForwarded); got != turns/2 {
		t.Errorf("the other replica's %s = %v, want %d", metricForwarded, got, turns/2)
	}
	if got := owner.Metric(metricForwarded); got != 0 {
		t.Errorf("the owner's %s = %v, want 0", metricForwarded, got)
	}
	if got := e2etest.Active(owner.Stored(owner.PassNamespace(key), "fwd")); !slices.Equal(got, want) {
		t.Errorf("stored\n%q\nwant\n%q", got, want)
	}
}

// TestReplicaGoneServesItsConversationsHere: the owner of a
// conversation stops serving while it is still a member (its row not yet
// Dead): the other replica's requests on the conversation fall back to
// it, served and recorded whole; once the owner's row is gone the other
// replica owns the conversation and forwards nothing.
func TestReplicaGoneServesItsConversationsHere(t *testing.T) {
	rs := pgReplicas(t, pgtest.DB(t), 2)
	// A conversation the second replica owns.
	conv := ""
	for i := 0; conv == ""; i++ {
		c := fmt.Sprintf("gone-%d", i)
		if _, self := rs[1].fleet.Owner(rs[1].PassNamespace(key) + "\x00" + c); self {
			conv = c
		}
	}
	a, b := rs[0], rs[1]
	a.PostDone("/v1/chat/completions", key, conv, e2etest.ChatBody("one", false))
	if b.Up.Count() != 1 || a.Up.Count() != 0 {
		t.Fatalf("upstream calls: a %d, b %d; want b's one", a.Up.Count(), b.Up.Count())
	}
	if err := b.Server.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"two", "three"} {
		if r := a.Post("/v1/chat/completions", key, conv, e2etest.ChatBody(text, text == "three")); r.Status != 200 || answerText(r.Body) != "echo: "+text {
			t.Fatalf("%s: %d %s", text, r.Status, r.Body)
		}
	}
	if got := a.Metric(metricFallback); got != 2 {
		t.Errorf("%s = %v, want 2", metricFallback, got)
	}
	if err := b.fleet.Close(); err != nil {
		t.Fatal(err)
	}
	a.tick <- time.Now()
	if err := <-a.beats; err != nil {
		t.Fatal(err)
	}
	a.PostDone("/v1/chat/completions", key, conv, e2etest.ChatBody("four", false))
	if got := a.Metric(metricFallback); got != 2 {
		t.Errorf("%s = %v once b left, want still 2", metricFallback, got)
	}
	want := []string{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two",
		"user:three", "assistant:echo: three", "user:four", "assistant:echo: four"}
	if got := e2etest.Active(a.Stored(a.PassNamespace(key), conv)); !slices.Equal(got, want) {
		t.Errorf("stored\n%q\nwant\n%q", got, want)
	}
}
