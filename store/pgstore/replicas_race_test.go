package pgstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestReplicasRaceOneConversation: two proxy.Servers, each on its own
// Store and window cache over one database (two replicas), take requests
// on one conversation at once, through chat completions and through the
// Responses API (whose answer's id pins its sequence numbers: it cannot
// rebase). Each exchange holds the conversation's lease from its plan's
// read to its commit, so the replicas take turns: every request is
// acknowledged, and stored exactly once, as a user message followed by
// its answer, and no lease is left behind once the replicas closed.
func TestReplicasRaceOneConversation(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		body func(text string) string
	}{
		{"chat completions", "/v1/chat/completions", func(text string) string {
			return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + text + `"}]}`
		}},
		{"responses", "/v1/responses", func(text string) string {
			return `{"model":"gpt-4o-mini","conversation":"race","input":"` + text + `"}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raceReplicas(t, tc.path, tc.body)
		})
	}
}

func raceReplicas(t *testing.T, path string, body func(string) string) {
	url := pgtest.DB(t)
	up, tenants := defaultTenants(t)
	var waits atomic.Int64
	var addrs []string
	var replicas []*pgstore.Store
	for range 2 {
		r := open(t, url, pgstore.Options{OnLeaseWait: func(string) { waits.Add(1) }})
		addr, _ := serve(t, tenants, r, nil)
		addrs, replicas = append(addrs, addr), append(replicas, r)
	}

	const clients, each = 6, 8 // three clients a replica
	asked := askedOnce(t, addrs, path, "sk-race", clients, each, func(c, i int) string {
		return fmt.Sprintf("question %d from client %d", i, c)
	}, body)
	for _, r := range replicas {
		r.Close() // frees the leases it kept (keep.go)
	}
	s := open(t, url, pgstore.Options{})
	var leases int
	if err := s.Pool().QueryRow(testCtx(t), `SELECT count(*) FROM recall_leases WHERE holder <> ''`).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	if leases != 0 {
		t.Errorf("got %d leases held once every request was answered, want 0", leases)
	}
	storedOnce(t, url, asked)
	// Upstream calls past one a request are the exchanges' retries
	// (conflicts); lease waits, the times a read found the lease held.
	t.Logf("%d requests, %d upstream calls, %d lease waits", len(asked), up.Count(), waits.Load())
}
