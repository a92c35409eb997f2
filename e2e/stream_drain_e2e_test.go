package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestUpstreamHoldingItsBodyOpenLosesItsConnection: an upstream that
// sends a streamed answer's last event and then neither ends its body nor
// closes the connection costs Recall at most a short wait after the
// client has everything: the exchange ends and is recorded, and the
// connection is closed, not kept waiting for the upstream's timeout.
func TestUpstreamHoldingItsBodyOpenLosesItsConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{}) // the upstream saw Recall close the connection
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if holdStream(c) {
			close(closed)
		}
	}()
	t.Cleanup(func() { ln.Close() })

	h := e2etest.New(t, e2etest.Options{Tenants: map[string]string{"hold.yaml": "id: hold\napi_keys: [\"rk-hold\"]\nupstream:\n  base_url: \"http://" +
		ln.Addr().String() + "/v1\"\n  api_key: \"sk-up\"\n  protocol: chat\n"}})
	r := h.Post("/v1/chat/completions", "rk-hold", "held-1", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 || !strings.Contains(r.Body, "[DONE]") || !strings.Contains(r.Body, "held") {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if d := h.WaitDone("held-1"); d.Status != 200 {
		t.Errorf("exchange ended with %d", d.Status)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Recall kept the upstream's connection open 10 s after the exchange ended")
	}
	if got := len(h.Stored("hold", "held-1")); got != 2 {
		t.Errorf("stored %d messages, want the turn's 2", got)
	}
}
