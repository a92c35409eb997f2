package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// replicas starts n `recall serve` children on the PostgreSQL database at
// url, each with its own (unused) data directory.
func replicas(t *testing.T, n int, url, upstream string) []*child {
	t.Helper()
	cs := make([]*child, n)
	for i := range cs {
		cs[i] = newChild(t, t.TempDir(), upstream)
		cs[i].env = []string{"RECALL_STORE_URL=" + url}
		cs[i].start()
	}
	return cs
}

func openPG(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestReplicasShareConversations runs two Recall processes on one
// PostgreSQL database: a conversation alternating between them keeps its
// whole history (each request sends only its new message, and the
// upstream gets every earlier turn), and 30 concurrent requests on one
// conversation spread over both are all kept, each whole, once.
func TestReplicasShareConversations(t *testing.T) {
	// The test server trusts every connection: the password is there to
	// show that no log line carries it.
	url := strings.Replace(pgtest.DB(t), "postgres@", "postgres:s3cret-db-pw@", 1)
	up := upstreamtest.NewTB(t)
	cs := replicas(t, 2, url, up.URL())
	defer func() {
		for _, c := range cs {
			if b, _ := os.ReadFile(c.logs.Name()); strings.Contains(string(b), "s3cret-db-pw") || !strings.Contains(string(b), "postgres:xxxxx@") {
				t.Errorf("replica log shows the database password, or not the masked store URL:\n%s", b)
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	store := openPG(t, url)

	const alternating = 8
	for i := range alternating {
		u := clientMsg(msg{role: "user", content: fmt.Sprintf("alt turn %d", i)})
		if _, err := exchange(client, cs[i%2].url(), "alt", []msg{u}, i%3 == 0); err != nil {
			t.Fatalf("turn %d on replica %d: %v", i, i%2, err)
		}
		if got, want := len(up.Last().Messages), 2*i+1; got != want {
			t.Fatalf("turn %d on replica %d: the upstream got %d messages, want %d (the whole history)", i, i%2, got, want)
		}
	}
	var want []string
	for i := range alternating {
		want = append(want, fmt.Sprintf("user:alt turn %d", i), fmt.Sprintf("assistant:echo: alt turn %d", i))
	}
	if got := storedStrings(t, store, "alt"); !slices.Equal(got, want) {
		t.Fatalf("stored\n%q\nwant\n%q", got, want)
	}

	const burst = 30
	errs := make([]error, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			u := clientMsg(msg{role: "user", content: fmt.Sprintf("burst %d", i)})
			_, errs[i] = exchange(client, cs[i%2].url(), "burst", []msg{u}, i%2 == 0)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("burst request %d: %v", i, err)
		}
	}
	got := storedStrings(t, store, "burst")
	if len(got) != 2*burst {
		t.Fatalf("stored %d messages, want %d: %q", len(got), 2*burst, got)
	}
	seen := map[string]bool{}
	for i := 0; i < len(got); i += 2 {
		text, ok := strings.CutPrefix(got[i], "user:")
		if !ok || got[i+1] != "assistant:echo: "+text || seen[text] {
			t.Fatalf("stored %q, want each request's message once, followed by its answer", got)
		}
		seen[text] = true
	}
}

// replicaLoad starts two replicas on the database at url, in front of a
// fake upstream of their own, and the crash test's load over both.
func replicaLoad(t *testing.T, url string) ([]*child, *load) {
	up := upstreamtest.NewTB(t, upstreamtest.WithKeepRequests(0))
	cs := replicas(t, 2, url, up.URL())
	return cs, newLoad(up, cs[0].url(), cs[1].url())
}

// TestCrashReplicasPostgres is the crash test's PostgreSQL mode: two
// replicas share the load on one database, and one of them at a time is
// killed with SIGKILL and restarted. No acknowledged turn is lost, none is
// partial.
func TestCrashReplicasPostgres(t *testing.T) {
	url := pgtest.DB(t)
	cs, l := replicaLoad(t, url)
	kills := 6
	drivers := l.run(t, kills, 16, func(k int, rng *rand.Rand) {
		c := cs[rng.IntN(2)]
		c.kill()
		c.start()
	})
	for _, c := range cs {
		stopChild(t, c)
	}
	l.check(t)
	checkAll(t, openPG(t, url), drivers, kills, false)
}

// TestDatabaseRestartUnderLoad restarts PostgreSQL (fast shutdown, then a
// kill -9) under the load of two replicas: requests caught by it get 503
// store_unavailable (or, streamed, an error event saying so), never
// another failure; no acknowledged turn is lost, none is partial; service
// resumes by itself.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	cs, l := replicaLoad(t, url)
	restarts := 4
	drivers := l.run(t, restarts, 16, func(k int, _ *rand.Rand) {
		if k%2 == 0 {
			srv.Stop()
		} else {
			srv.Kill()
		}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
	})
	l.check(t)
	for _, err := range l.disrupted {
		if !strings.Contains(err.Error(), "store_unavailable") {
			t.Errorf("a request caught by the restart: %v, want 503 store_unavailable", err)
		}
	}
	t.Logf("%d requests caught by %d restarts", len(l.disrupted), restarts)
	for _, c := range cs {
		stopChild(t, c)
	}
	checkAll(t, openPG(t, url), drivers, restarts, false)
}

// storedStrings returns a conversation's active messages as stored, in
// their comparable form.
func storedStrings(t *testing.T, s history.Store, conv string) []string {
	t.Helper()
	var out []string
	err := s.Messages(context.Background(), history.Key{Tenant: passNamespace(crashKey), Conversation: conv}, 0, false,
		func(m history.Message) bool { out = append(out, storedMsg(m.Raw).String()); return true })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReplicaWaitsForTheDatabase starts a replica while its database is
// down: it waits (its first connection attempt is what starts the
// database here) and serves once the database is up.
func TestReplicaWaitsForTheDatabase(t *testing.T) {
	srv := pgtest.Start(t)
	url := srv.NewDB(t)
	srv.Stop()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", srv.Port()))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() {
		conn, err := ln.Accept() // the replica's first attempt
		if err == nil {
			conn.Close()
		}
		ln.Close()
		started <- srv.Start()
	}()
	defer ln.Close()
	up := upstreamtest.NewTB(t)
	c := replicas(t, 1, url, up.URL())[0] // returns once /readyz answers 200
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	u := clientMsg(msg{role: "user", content: "hello"})
	if _, err := exchange(&http.Client{}, c.url(), "w", []msg{u}, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(c.logs.Name()); !strings.Contains(string(b), "store unavailable, retrying") {
		t.Errorf("the replica did not say it waited for the database:\n%s", b)
	}
}
