package proxy_test

import (
	"io"
	"strings"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestSecretsNeverLogged runs whole sessions (tenant keys swapped for an
// upstream key, client keys passed through, errors, streams, a 401) with
// debug logging and looks for every configured or presented key in the
// logs: none may appear.
func TestSecretsNeverLogged(t *testing.T) {
	const (
		acmeKey     = "rk-acme-secret-0001"
		acmeUpKey   = "sk-upstream-acme-secret-0002"
		betaKey     = "rk-beta-secret-0003"
		adminKey    = "rk-admin-secret-0004"
		wrongKey    = "rk-wrong-secret-0005"
		passKey     = "sk-passthrough-secret-0006"
		passWrong   = "sk-other-pass-secret-0007"
		headerValue = "org-header-secret-0008"
	)
	tests := []struct {
		name    string
		opts    e2etest.Options
		secrets []string
		// session keys: the key a client uses, and the Authorization the
		// upstream must receive for it.
		clients map[string]string
		reject  string // a key answered 401
	}{
		{
			name: "tenants",
			opts: e2etest.Options{
				Tenants: map[string]string{
					"acme.yaml": "id: acme\napi_keys: [\"" + acmeKey + "\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"" + acmeUpKey + "\"\n  headers:\n    X-Org: \"" + headerValue + "\"\n",
					"beta.yaml": "id: beta\napi_keys: [\"" + betaKey + "\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n",
				},
				Global: func(g *config.Global) { g.AdminKey = adminKey; noSummaries(g) },
			},
			secrets: []string{acmeKey, acmeUpKey, betaKey, adminKey, wrongKey, headerValue},
			clients: map[string]string{acmeKey: "Bearer " + acmeUpKey, betaKey: "Bearer " + betaKey},
			reject:  wrongKey,
		},
		{
			name:    "pass-through",
			opts:    e2etest.Options{Global: noSummaries},
			secrets: []string{passKey, passWrong},
			clients: map[string]string{passKey: "Bearer " + passKey, passWrong: "Bearer " + passWrong},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.opts)
			for k, wantAuth := range tt.clients {
				secretSession(t, h, k, wantAuth)
			}
			if tt.reject != "" {
				r := h.Post("/v1/chat/completions", tt.reject, "conv-1", e2etest.ChatBody("hi", false))
				if r.Status != 401 {
					t.Errorf("unknown key: got status %d, want 401", r.Status)
				}
				r = h.Post("/v1/models", tt.reject, "", "")
				if r.Status != 401 {
					t.Errorf("unknown key, pass-through path: got status %d, want 401", r.Status)
				}
			}
			logs := h.Logs.String()
			if !strings.Contains(logs, `"msg":"request"`) {
				t.Fatalf("got no request log lines, want one per request: %s", logs)
			}
			for _, s := range tt.secrets {
				if strings.Contains(logs, s) {
					t.Errorf("logs contain secret %q:\n%s", s, logs)
				}
				// A key cut in half is still a leak.
				if strings.Contains(logs, s[len(s)/2:]) {
					t.Errorf("logs contain the second half of secret %q", s)
				}
			}
		})
	}
}

// secretSession runs a session with key: plain and streamed turns, an
// upstream error, a stream cut mid-way, a bad body and a pass-through
// call, and checks the upstream received wantAuth every time.
func secretSession(t *testing.T, h *harness, key, wantAuth string) {
	t.Helper()
	conv := "secret-session"
	h.Up.Reset()
	r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("hello", false))
	if r.Status != 200 {
		t.Fatalf("turn: got status %d, want 200: %s", r.Status, r.Body)
	}
	resp := h.send(key, conv, e2etest.ChatBody("stream it", true))
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	h.Up.Enqueue(upstreamtest.Reply{Status: 500})
	if r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("fail", false)); r.Status != 500 {
		t.Errorf("upstream error: got status %d, want 500", r.Status)
	}
	h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultCutMidStream})
	resp = h.send(key, conv, e2etest.ChatBody("cut", true))
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultResetBeforeHeaders})
	if r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("reset", false)); r.Status != 502 {
		t.Errorf("reset: got status %d, want 502", r.Status)
	}
	if r := h.Post("/v1/chat/completions", key, conv, `{"messages":"nope"}`); r.Status != 400 {
		t.Errorf("bad body: got status %d, want 400", r.Status)
	}
	if r := h.Post("/v1/embeddings", key, "", `{"input":"x"}`); r.Status != 200 {
		t.Errorf("pass-through: got status %d, want 200: %s", r.Status, r.Body)
	}
	reqs := h.Up.Requests()
	if len(reqs) != 6 {
		t.Errorf("upstream got %d requests, want 6", len(reqs))
	}
	for _, rec := range reqs {
		if got := rec.Header.Get("Authorization"); got != wantAuth {
			t.Errorf("upstream %s got Authorization %q, want %q", rec.Path, got, wantAuth)
		}
	}
}
