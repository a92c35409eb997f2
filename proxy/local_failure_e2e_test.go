package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/proxy"
)

// TestLocalFailureIsNotBlamedOnTheUpstream breaks a tenant after its
// configuration loaded (its curation strategy no longer builds): Recall
// answers 500 without reaching the upstream, says nothing of the cause to
// the client, and logs it.
func TestLocalFailureIsNotBlamedOnTheUpstream(t *testing.T) {
	h := newHarness(t, harnessOptions{tenants: twoTenants.tenants, proxy: func(c *proxy.Config) {
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
			r := h.post(tt.path, "rk-acme-1", "", tt.body)
			if r.status != 500 {
				t.Fatalf("got status %d, want 500: %s", r.status, r.body)
			}
			checkErrorShape(t, []byte(r.body), "server_error", "internal_error")
			if strings.Contains(r.body, "no-such-strategy") {
				t.Errorf("got body %s, want one that does not name the cause", r.body)
			}
		})
	}
	if n := h.up.Count(); n != 0 {
		t.Errorf("got %d upstream requests, want none", n)
	}
	if !strings.Contains(h.logs.String(), "no-such-strategy") {
		t.Errorf("the log does not name the cause: %s", h.logs.String())
	}
}
