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

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/wire"
)

// TestReplicasNoStaleHistory: eight clients send 1,000 chat requests in
// all on one conversation through two replicas (two proxy.Servers, each
// on its own Store and window cache over one database), four clients a
// replica, each client's next request once its last was answered. No
// request goes upstream with a stale history: the upstream request of the
// k-th turn stored carries the k-1 turns stored before it (the tenant's
// budget holds them all), the first race on the conversation included.
// Every request is acknowledged and stored exactly once, a question
// followed by its answer, and goes upstream once.
func TestReplicasNoStaleHistory(t *testing.T) {
	const clients, each = 8, 125
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
				text := fmt.Sprintf("q%d-%d", c, i)
				body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + text + `"}]}`
				req, _ := http.NewRequest("POST", "http://"+addrs[c%2]+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer sk-stale")
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

	// What each question's upstream request carried: the user texts
	// before its own (the last).
	carried := map[string]map[string]bool{}
	for _, r := range up.Requests() {
		var users []string
		for _, raw := range r.Messages {
			if m := gjson.ParseBytes(raw); m.Get("role").Str == wire.RoleUser {
				users = append(users, m.Get("content").Str)
			}
		}
		if len(users) == 0 {
			t.Fatalf("an upstream request without a user message: %s", r.Body)
		}
		own := users[len(users)-1]
		if carried[own] != nil {
			t.Errorf("%q went upstream twice", own)
		}
		carried[own] = map[string]bool{}
		for _, u := range users[:len(users)-1] {
			carried[own][u] = true
		}
	}

	s := open(t, url, pgstore.Options{})
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
	var order []string // the questions, as stored
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
			order = append(order, string(m.Text()))
		}
	}
	seen := map[string]int{}
	for _, q := range order {
		seen[q]++
	}
	for text := range asked {
		if seen[text] != 1 {
			t.Errorf("%q: stored %d times, want 1", text, seen[text])
		}
	}
	if len(stored) != 2*clients*each {
		t.Errorf("got %d messages stored, want %d (two a turn)", len(stored), 2*clients*each)
	}

	stale := 0
	for k, q := range order {
		got, ok := carried[q]
		if !ok {
			t.Errorf("%q: stored, never sent upstream", q)
			continue
		}
		var missing []string
		for _, before := range order[:k] {
			if !got[before] {
				missing = append(missing, before)
			}
		}
		if len(missing) > 0 {
			stale++
			if stale <= 5 {
				t.Logf("turn %d (%q) went upstream without %d of the %d turns stored before it, the newest %q",
					k+1, q, len(missing), k, missing[len(missing)-1])
			}
		}
	}
	if stale != 0 {
		t.Errorf("got %d stale histories in %d requests, want 0", stale, len(order))
	}
	// How the replicas took turns: the turns stored in a row by one.
	switches := 0
	for k := 1; k < len(order); k++ {
		var a, b int
		fmt.Sscanf(order[k-1], "q%d-", &a)
		fmt.Sscanf(order[k], "q%d-", &b)
		if a%2 != b%2 {
			switches++
		}
	}
	t.Logf("%d turns, the replica changing %d times", len(order), switches)
}
