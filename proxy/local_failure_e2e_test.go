package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// TestLocalFailureIsNotBlamedOnTheUpstream breaks a tenant after its
// configuration loaded (its curation strategy no longer builds): Recall
// answers 500 without reaching the upstream, says nothing of the cause to
// the client, and logs it.
func TestLocalFailureIsNotBlamedOnTheUpstream(t *testing.T) {
	h := newHarness(t, e2etest.Options{Tenants: e2etest.TwoTenants().Tenants, Proxy: func(c *proxy.Config) {
		acme, ok := c.Tenants.Current().Tenant("acme")
		if !ok {
			t.Fatal("no tenant acme")
		}
		acme.History.Strategies = []string{"no-such-strategy"}
	}})
	tests := []struct{ name, path, body string }{
		{"pass-through", "/v1/embeddings", `{"input":"hi"}`},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.Post(tt.path, "rk-acme-1", "", tt.body)
			if r.Status != 500 {
				t.Fatalf("got status %d, want 500: %s", r.Status, r.Body)
			}
			checkErrorShape(t, []byte(r.Body), "server_error", "internal_error")
			if strings.Contains(r.Body, "no-such-strategy") {
				t.Errorf("got body %s, want one that does not name the cause", r.Body)
			}
		})
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("got %d upstream requests, want none", n)
	}
	if !strings.Contains(h.Logs.String(), "no-such-strategy") {
		t.Errorf("the log does not name the cause: %s", h.Logs.String())
	}
}
