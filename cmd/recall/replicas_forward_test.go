package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// metric reads one sample of c's /metrics (ok false when absent).
func metric(t *testing.T, c *child, series string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(c.url() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestReplicasForwardToTheOwnerProcess runs two `recall serve` with
// RECALL_REPLICA_URL on one PostgreSQL database: once each sees the
// other (recall_replicas 2), a conversation alternating between them
// keeps its whole history, stored once and in order, and one replica
// forwarded every request it got on it to the other, which served them
// all. Each replica logs its id and URL at start, and leaves the fleet
// (its row deleted) when it stops.
func TestReplicasForwardToTheOwnerProcess(t *testing.T) {
	url := pgtest.DB(t)
	up := upstreamtest.NewTB(t)
	cs := make([]*child, 2)
	for i := range cs {
		cs[i] = newChild(t, t.TempDir(), up.URL())
		cs[i].env = []string{"RECALL_STORE_URL=" + url, "RECALL_REPLICA_URL=" + cs[i].url()}
		cs[i].start()
	}
	// Each learns of the other at its next heartbeat (a second).
	deadline := time.Now().Add(15 * time.Second)
	for _, c := range cs {
		for {
			if n, _ := metric(t, c, "recall_replicas"); n == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not see both replicas within 15s", c.url())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	const turns = 8
	var want []string
	for i := range turns {
		u := clientMsg(msg{role: "user", content: fmt.Sprintf("fwd turn %d", i)})
		if _, err := exchange(client, cs[i%2].url(), "fwd", []msg{u}, i%4 >= 2); err != nil {
			t.Fatalf("turn %d on replica %d: %v", i, i%2, err)
		}
		if got, want := len(up.Last().Messages), 2*i+1; got != want {
			t.Fatalf("turn %d on replica %d: the upstream got %d messages, want %d (the whole history)", i, i%2, got, want)
		}
		want = append(want, fmt.Sprintf("user:fwd turn %d", i), fmt.Sprintf("assistant:echo: fwd turn %d", i))
	}
	store := openPG(t, url)
	if got := storedStrings(t, store, "fwd"); !slices.Equal(got, want) {
		t.Fatalf("stored\n%q\nwant\n%q", got, want)
	}
	var forwarded []float64
	for _, c := range cs {
		n, ok := metric(t, c, `recall_forwarded_requests_total{outcome="forwarded"}`)
		if !ok {
			t.Fatalf("%s: no recall_forwarded_requests_total", c.url())
		}
		forwarded = append(forwarded, n)
	}
	if slices.Min(forwarded) != 0 || slices.Max(forwarded) != turns/2 {
		t.Errorf("forwarded %v, want one replica's %d requests, none of the other's", forwarded, turns/2)
	}
	for _, c := range cs {
		b, err := os.ReadFile(c.logs.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"replica_url":"`+c.url()+`"`) || !strings.Contains(string(b), `"replica_id":"`) {
			t.Errorf("%s's log does not give its replica id and URL:\n%s", c.url(), b)
		}
	}
	stopChild(t, cs[1])
	var rows []string
	r, err := store.Pool().Query(context.Background(), `SELECT url FROM recall_replicas`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var u string
		if err := r.Scan(&u); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, u)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows, []string{cs[0].url()}) {
		t.Errorf("recall_replicas holds %q once the second replica stopped, want the first's URL alone", rows)
	}
}
