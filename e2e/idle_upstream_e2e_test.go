package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/uplink"
)

// TestPausesBeforeAnUpstreamThatClosesIdleConnections: an upstream that
// closes a connection left idle for a second (as Node's and uvicorn's
// servers do after 5 s) costs no request an error, whatever the pause
// before it, on every protocol, streamed or not, with Recall's own
// upstream clients (not the harness's short-lived ones). Every request
// reaches the upstream exactly once, and every turn is stored.
func TestPausesBeforeAnUpstreamThatClosesIdleConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses of up to 10 s")
	}
	pauses := []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond, 0, 3 * time.Second, 5500 * time.Millisecond, 10 * time.Second}
	cases := []struct {
		name, protocol, path, body string
		memory                     bool
	}{
		{"chat", "chat", "/v1/chat/completions", `{"model":"gpt-4o-mini","stream":%t,"messages":[{"role":"user","content":"turn %d"}]}`, true},
		{"responses", "openai", "/v1/responses", `{"model":"gpt-4.1","stream":%t,"input":"turn %d"}`, true},
		{"messages", "anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":%t,"messages":[{"role":"user","content":"turn %d"}]}`, true},
		{"passthrough", "openai", "/v1/embeddings", `{"model":"text-embedding-3-small","input":"turn %d %t"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := e2etest.New(t, e2etest.Options{
				Upstream: []upstreamtest.Option{upstreamtest.WithIdleTimeout(time.Second)},
				Tenants: map[string]string{"idle.yaml": "id: idle\napi_keys: [\"rk-idle\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"sk-up\"\n  protocol: " +
					tc.protocol + "\n"},
				Proxy: func(c *proxy.Config) {
					c.Client, c.BufferingClient = uplink.DefaultClient(), uplink.BufferingClient(64<<20)
				},
			})
			for i, pause := range pauses {
				time.Sleep(pause) // the user's pause is the input under test
				stream := i%2 == 1
				var body string
				if tc.memory {
					body = fmt.Sprintf(tc.body, stream, i)
				} else {
					body = fmt.Sprintf(tc.body, i, stream)
				}
				r := h.Post(tc.path, "rk-idle", "idle-"+tc.name, body)
				if r.Status != 200 {
					t.Fatalf("request %d after a pause of %v: status %d: %s", i, pause, r.Status, r.Body)
				}
				if tc.memory {
					h.WaitDone("idle-" + tc.name)
				}
			}
			if got := h.Up.Count(); got != len(pauses) {
				t.Errorf("the upstream received %d requests for %d sent", got, len(pauses))
			}
			if tc.memory {
				if got := len(h.Stored("idle", "idle-"+tc.name)); got != 2*len(pauses) {
					t.Errorf("stored %d messages, want %d", got, 2*len(pauses))
				}
			}
		})
	}
}
