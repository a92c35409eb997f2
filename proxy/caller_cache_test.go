package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
)

// loadSet loads tenants from files (none: the pass-through default).
func loadSet(t *testing.T, files map[string]string) *config.Set {
	t.Helper()
	g := config.DefaultGlobal()
	if len(files) > 0 {
		g.TenantsDir = t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(g.TenantsDir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return set
}

type nopStore struct{ history.Store }

func authenticateKey(t *testing.T, s *Server, key string) caller {
	t.Helper()
	var rc fasthttp.RequestCtx
	rc.Request.Header.Set(fasthttp.HeaderAuthorization, "Bearer "+key)
	c, err := s.authenticate(&rc)
	if err != nil {
		t.Fatalf("authenticate %q: %v", key, err)
	}
	return c
}

// A pass-through caller is cached by key, and each key keeps its own
// namespace, on the first request and every later one, across a reload.
func TestPassThroughCallersAreCachedByKey(t *testing.T) {
	tenants := &StaticTenants{Set: loadSet(t, nil)}
	s, err := New(Config{Tenants: tenants, Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if round == 2 {
			tenants.Set = loadSet(t, nil) // a reload: a new generation
		}
		for _, key := range []string{"sk-one", "sk-two"} {
			c := authenticateKey(t, s, key)
			if want := auth.Namespace(config.DefaultTenantID, key); c.Namespace != want || c.Key != key || c.UpstreamKey() != key {
				t.Errorf("round %d, key %s: got namespace %q key %q upstream %q, want %q and the key", round, key, c.Namespace, c.Key, c.UpstreamKey(), want)
			}
		}
	}
	if got := len(s.tenants.passed); got != 2 {
		t.Errorf("got %d cached callers, want 2", got)
	}
	for i := range maxPassedCallers + 10 {
		authenticateKey(t, s, fmt.Sprintf("sk-%d", i))
	}
	if got := len(s.tenants.passed); got > maxPassedCallers {
		t.Errorf("got %d cached callers, want at most %d", got, maxPassedCallers)
	}
}

// A tenant's own keys are never cached: they are checked by digest in
// constant time on every request.
func TestTenantKeysAreNotCached(t *testing.T) {
	set := loadSet(t, map[string]string{
		"acme.yaml": "id: acme\napi_keys: [\"rk-acme\"]\nupstream:\n  base_url: \"http://127.0.0.1:9/v1\"\n  api_key: \"sk-up\"\n",
	})
	s, err := New(Config{Tenants: StaticTenants{Set: set}, Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if c := authenticateKey(t, s, "rk-acme"); c.Namespace != "acme" {
			t.Errorf("got namespace %q, want acme", c.Namespace)
		}
	}
	if got := len(s.tenants.passed); got != 0 {
		t.Errorf("got %d cached callers, want none", got)
	}
}
