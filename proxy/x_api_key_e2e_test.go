package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/apitest"
	"github.com/recallproxy/recall/internal/e2etest"
)

// Anthropic's SDKs send their key as x-api-key: a tenant key sent so
// authenticates chat calls, passed-through calls and the conversation
// API as the bearer key does, and never goes upstream (the tenant's key
// does; in pass-through, the client's own, as a bearer key).
func TestXAPIKeyAuthenticates(t *testing.T) {
	tests := []struct {
		name, key, namespace, wantAuth string
		opts                           e2etest.Options
	}{
		{"tenant key", "rk-acme-1", "acme", "Bearer sk-upstream-acme", e2etest.TwoTenants()},
		{"pass-through", "sk-client-own", "", "Bearer sk-client-own", e2etest.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			if tt.namespace == "" {
				tt.namespace = h.PassNamespace(tt.key)
			}
			for _, p := range []struct{ name, path, conv, body string }{
				{"chat", "/v1/chat/completions", "xk-1", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
				{"pass-through path", "/v1/embeddings", "", `{"input":"hi","model":"text-embedding-3-small"}`},
			} {
				got := postForUpstreamHeaders(t, h, p.name, p.path, p.conv, p.body, map[string]string{"X-Api-Key": tt.key})
				if auth := got.Values("Authorization"); len(auth) != 1 || auth[0] != tt.wantAuth {
					t.Errorf("%s: upstream Authorization %q, want only %q", p.name, auth, tt.wantAuth)
				}
				if v := got.Values("X-Api-Key"); len(v) > 0 {
					t.Errorf("%s: upstream got x-api-key %q, want none", p.name, v)
				}
			}
			if got := e2etest.Active(h.Stored(tt.namespace, "xk-1")); len(got) != 2 {
				t.Errorf("stored in %s: %q, want the turn", tt.namespace, got)
			}

			// The conversation API takes the same key the same way, and
			// sees the conversation the chat call recorded.
			r := h.SendHeaders("GET", "/recall/v1/conversations", map[string]string{"X-Api-Key": tt.key}, "")
			if err := apitest.Check("GET", "/recall/v1/conversations", r.Status, r.Header, []byte(r.Body)); err != nil {
				t.Error(err)
			}
			if r.Status != 200 || !strings.Contains(r.Body, `"xk-1"`) {
				t.Errorf("API list: got %d %s, want 200 listing xk-1", r.Status, r.Body)
			}
		})
	}
}

// A key no tenant has is refused as a bearer key is, whichever header
// carries it.
func TestXAPIKeyUnknownIsRefused(t *testing.T) {
	h := newHarness(t, e2etest.TwoTenants())
	r := h.PostHeaders("/v1/chat/completions", map[string]string{"Content-Type": "application/json", "X-Api-Key": "rk-nobody"},
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 401 || !strings.Contains(r.Body, `"invalid_api_key"`) {
		t.Errorf("got %d %s, want 401 invalid_api_key", r.Status, r.Body)
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}
