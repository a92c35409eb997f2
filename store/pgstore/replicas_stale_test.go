package pgstore_test

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/pgtest"
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
	up, tenants := defaultTenants(t)
	addrs := serveReplicas(t, url, tenants, sameOptions)
	asked := askedOnce(t, addrs, "/v1/chat/completions", "sk-stale", clients, each, func(c, i int) string {
		return fmt.Sprintf("q%d-%d", c, i)
	}, func(text string) string {
		return `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + text + `"}]}`
	})

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

	order := storedOnce(t, url, asked) // the questions, as stored

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
