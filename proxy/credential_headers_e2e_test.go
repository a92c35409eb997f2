package proxy_test

import (
	"net/http"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// clientCredentials are every credential header a client may send along
// with the bearer key it authenticates with: Anthropic's, Azure
// OpenAI's, Google's and a proxy's.
var clientCredentials = map[string]string{
	"X-Api-Key":           "sk-ant-client-key",
	"Api-Key":             "azure-client-key",
	"X-Goog-Api-Key":      "goog-client-key",
	"Proxy-Authorization": "Basic Y2xpZW50OmtleQ==",
}

// postForUpstreamHeaders posts the JSON body to path with headers (and
// X-Conversation-ID conv, unless ""), fails the test (naming the request
// name) unless it is answered 200, waits for conv's exchange to finish,
// and returns the headers the upstream got.
func postForUpstreamHeaders(t *testing.T, h *harness, name, path, conv, body string, headers map[string]string) http.Header {
	t.Helper()
	headers["Content-Type"] = "application/json"
	if conv != "" {
		headers["X-Conversation-ID"] = conv
	}
	if r := h.PostHeaders(path, headers, body); r.Status != 200 {
		t.Fatalf("%s: got %d %s, want 200", name, r.Status, r.Body)
	}
	if conv != "" {
		h.WaitDone(conv)
	}
	return h.Up.Last().Header
}

// TestOnlyOneCredentialGoesUpstream sends a chat call and a passed-through
// call with a bearer key and every other credential header: the upstream
// sees only the tenant's key when the tenant has one, and only the bearer
// key the client authenticated with in pass-through.
func TestOnlyOneCredentialGoesUpstream(t *testing.T) {
	tests := []struct {
		name     string
		opts     e2etest.Options
		key      string
		wantAuth string
	}{
		{"tenant key", e2etest.TwoTenants(), "rk-acme-1", "Bearer sk-upstream-acme"},
		{"pass-through", e2etest.Options{}, "sk-client-own", "Bearer sk-client-own"},
	}
	paths := []struct{ name, path, conv, body string }{
		{"chat", "/v1/chat/completions", "cred-1", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
		{"pass-through path", "/v1/embeddings", "", `{"input":"hi","model":"text-embedding-3-small"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			for _, p := range paths {
				headers := map[string]string{"Authorization": "Bearer " + tt.key}
				for k, v := range clientCredentials {
					headers[k] = v
				}
				got := postForUpstreamHeaders(t, h, p.name, p.path, p.conv, p.body, headers)
				if auth := got.Values("Authorization"); len(auth) != 1 || auth[0] != tt.wantAuth {
					t.Errorf("%s: upstream Authorization %q, want only %q", p.name, auth, tt.wantAuth)
				}
				for name := range clientCredentials {
					if v := got.Values(name); len(v) > 0 {
						t.Errorf("%s: upstream got the client's %s %q, want none", p.name, http.CanonicalHeaderKey(name), v)
					}
				}
			}
		})
	}
}
