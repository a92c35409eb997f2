package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// A compaction asked for through both replicas at once is made once: the
// first holds the conversation's summary lease while its summariser call
// is in flight (held by the fake upstream), the second, sent meanwhile,
// waits for the lease and then finds the summary made. (The second is sent
// while the first is provably in flight, but whether it reaches the lease
// before the release is up to the scheduler: the lease's exclusion itself
// is proven in store/pgstore's lease tests.)
func TestReplicasSummarizeOnce(t *testing.T) {
	url := pgtest.DB(t)
	up := upstreamtest.NewTB(t)
	cs := replicas(t, 2, url, up.URL())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	for i := range 6 { // both replicas see the pass-through credential
		u := clientMsg(msg{role: "user", content: fmt.Sprintf("once turn %d", i)})
		if _, err := exchange(client, cs[i%2].url(), "once", []msg{u}, false); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if n := len(up.SummaryCalls()); n != 0 {
		t.Fatalf("%d summariser calls before the test asked for one (6 turns, trigger 10)", n)
	}

	up.EnqueueSummary(upstreamtest.Reply{Hold: true})
	summarize := func(c *child) (int, string) {
		req, _ := http.NewRequest("POST", c.url()+"/recall/v1/conversations/once/summarize", nil)
		req.Header.Set("Authorization", "Bearer "+crashKey)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status := make([]int, 2)
	bodies := make([]string, 2)
	var wg sync.WaitGroup
	wg.Go(func() { status[0], bodies[0] = summarize(cs[0]) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := up.WaitStalled(ctx, 1); err != nil {
		t.Fatalf("the first replica's summariser call never arrived: %v", err)
	}
	wg.Go(func() { status[1], bodies[1] = summarize(cs[1]) })
	up.Release()
	wg.Wait()
	for i := range status {
		if status[i] != 200 {
			t.Errorf("summarize through replica %d: %d %s", i, status[i], bodies[i])
		}
	}
	if n := len(up.SummaryCalls()); n != 1 {
		t.Errorf("got %d summariser calls, want 1", n)
	}
	snap, err := openPG(t, url).Load(context.Background(), history.Key{Tenant: passNamespace(crashKey), Conversation: "once"}, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if m := snap.Meta; m.Summaries != 1 || m.Summary == nil {
		t.Errorf("stored %d summaries (%+v), want 1", m.Summaries, m.Summary)
	}
}
