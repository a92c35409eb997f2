package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestSIGHUPReloadsTenants changes a tenant's key while the binary serves,
// sends SIGHUP, and checks that the new key is accepted and the old one
// refused, without a restart.
func TestSIGHUPReloadsTenants(t *testing.T) {
	up := upstreamtest.NewTB(t)
	dir := t.TempDir()
	tenants := filepath.Join(dir, "tenants")
	if err := os.Mkdir(tenants, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTenant := func(key string) {
		t.Helper()
		body := fmt.Sprintf("id: acme\napi_keys: [%q]\nupstream:\n  base_url: %q\n", key, up.URL())
		if err := os.WriteFile(filepath.Join(tenants, "acme.yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeTenant("rk-old-key")
	global := filepath.Join(dir, "recall.yaml")
	if err := os.WriteFile(global, []byte("tenants_dir: tenants\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newChild(t, filepath.Join(dir, "data"), up.URL())
	c.env = []string{"RECALL_CONFIG=" + global}
	c.start()

	status := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", c.url()+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("rk-old-key"); got != 200 {
		t.Fatalf("old key before the reload: got %d, want 200", got)
	}
	writeTenant("rk-new-key")
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	c.waitLog("configuration reloaded")
	if got := status("rk-new-key"); got != 200 {
		t.Errorf("new key after the reload: got %d, want 200", got)
	}
	if got := status("rk-old-key"); got != 401 {
		t.Errorf("old key after the reload: got %d, want 401", got)
	}
}

// waitLog waits until the child's log holds text, or fails after a deadline.
func (c *child) waitLog(text string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(c.logs.Name())
		if err != nil {
			c.t.Fatal(err)
		}
		if bytes.Contains(b, []byte(text)) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("child never logged %q", text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
