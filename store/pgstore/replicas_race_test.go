package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/wire"
)

// TestReplicasRaceOneConversation: two proxy.Servers, each on its own
// Store and window cache over one database (two replicas), take requests
// on one conversation at once, through chat completions and through the
// Responses API (whose answer's id pins its sequence numbers: it cannot
// rebase). Each exchange holds the conversation's lease from its plan's
// read to its commit, so the replicas take turns: every request is
// acknowledged, and stored exactly once, as a user message followed by
// its answer, and no lease is left behind.
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
	up := upstreamtest.NewTB(t)
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = up.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for range 2 {
		s := open(t, url, pgstore.Options{})
		srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: tenants}, Store: history.NewCache(s, 0, 0)})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Shutdown(context.Background()) })
		addrs = append(addrs, ln.Addr().String())
	}

	const clients, each = 6, 8 // three clients a replica
	type outcome struct {
		text   string
		status int
		body   string
	}
	results := make(chan outcome, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				text := fmt.Sprintf("question %d from client %d", i, c)
				req, _ := http.NewRequest("POST", "http://"+addrs[c%2]+path, strings.NewReader(body(text)))
				req.Header.Set("Authorization", "Bearer sk-race")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Conversation-ID", "race")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				results <- outcome{text, resp.StatusCode, string(b)}
			}
		}()
	}
	wg.Wait()
	close(results)

	asked := map[string]bool{}
	for r := range results {
		asked[r.text] = true
		if r.status != http.StatusOK {
			t.Errorf("%q: got %d %s, want 200", r.text, r.status, r.body)
		}
	}
	if len(asked) != clients*each {
		t.Fatalf("got %d answers, want %d", len(asked), clients*each)
	}
	s := open(t, url, pgstore.Options{})
	var leases int
	if err := s.Pool().QueryRow(testCtx(t), `SELECT count(*) FROM recall_leases`).Scan(&leases); err != nil {
		t.Fatal(err)
	}
	if leases != 0 {
		t.Errorf("got %d leases held once every request was answered, want 0", leases)
	}

	ns, err := s.Namespaces(testCtx(t), "", "", 10)
	if err != nil || len(ns) != 1 {
		t.Fatalf("got namespaces %v (%v), want one", ns, err)
	}
	var stored []history.Message
	err = s.Messages(testCtx(t), history.Key{Tenant: ns[0], Conversation: "race"}, 0, true, func(m history.Message) bool {
		stored = append(stored, m)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, m := range stored {
		if !m.Active() {
			t.Errorf("message %d: got flags %v, want active (nothing superseded)", m.Seq, m.Flags)
		}
		wantRole := wire.RoleUser
		if i%2 == 1 {
			wantRole = wire.RoleAssistant
		}
		if m.Role != wantRole {
			t.Fatalf("message %d: got role %s, want %s (each turn a question and its answer)", m.Seq, m.Role, wantRole)
		}
		if m.Role == wire.RoleUser {
			seen[string(m.Text())]++
		}
	}
	for text := range asked {
		if seen[text] != 1 {
			t.Errorf("%q: stored %d times, want 1", text, seen[text])
		}
	}
	if len(stored) != 2*clients*each {
		t.Errorf("got %d messages stored, want %d (two a turn)", len(stored), 2*clients*each)
	}
}
