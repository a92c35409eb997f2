package proxy_test

import (
	"io"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// TestExpectContinueRefusesAnOversizedChatBodyUnread sends only the
// headers of requests that ask "Expect: 100-continue": a chat body
// declared over MaxBodyBytes is refused with 413 at once, without asking
// for the body; anything else is told to continue.
func TestExpectContinueRefusesAnOversizedChatBodyUnread(t *testing.T) {
	const limit = 64 << 10
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.MaxBodyBytes = limit }})
	tests := []struct {
		name   string
		target string
		length int
		status int
	}{
		{"chat over the limit", "/v1/chat/completions", limit + 1, 413},
		{"prefixed chat over the limit", "/c/big-1/v1/chat/completions", 32 << 20, 413},
		{"chat within the limit", "/v1/chat/completions", limit, 100},
		{"pass-through over the limit", "/v1/files", limit + 1, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.Raw("POST " + tt.target + " HTTP/1.1\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n" +
				"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(tt.length) + "\r\nExpect: 100-continue\r\n\r\n")
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("got status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 100 {
				return
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("read body: %v", err)
			}
			checkErrorShape(t, body, "invalid_request_error", "request_too_large")
			if !resp.Close {
				t.Error("got a connection kept open, want it closed (the client may be sending the body)")
			}
		})
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("got %d upstream requests, want none", n)
	}
}
