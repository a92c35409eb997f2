package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A WebSocket upgrade of a path Recall does not serve as one (any but
// /v1/responses, see websocket_e2e_test.go) is refused with 426 in
// OpenAI's error shape (the status on which a client that tries WebSocket
// first falls back to HTTP at once), never forwarded as a plain GET;
// another upgrade (h2c) is ignored, as a server may, and the request
// served over HTTP/1.1.
func TestWebSocketUpgradeIsNotForwarded(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	for _, tc := range []struct {
		name, upgrade string
		want          int
	}{
		{"websocket", "websocket", 426},
		{"websocket, any case", "WebSocket", 426},
		{"h2c", "h2c", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Up.Reset()
			r := h.SendHeaders("GET", "/v1/models",
				map[string]string{"Authorization": "Bearer " + key, "Connection": "Upgrade", "Upgrade": tc.upgrade}, "")
			if r.Status != tc.want {
				t.Fatalf("got status %d, want %d: %s", r.Status, tc.want, r.Body)
			}
			if tc.want != 426 {
				return
			}
			checkErrorShape(t, []byte(r.Body), "invalid_request_error", "websocket_not_supported")
			if n := h.Up.Count(); n != 0 {
				t.Errorf("the upstream got %d requests, want none", n)
			}
		})
	}
}

// A 405 names the methods the route takes in Allow (RFC 9110 section
// 15.5.6).
func TestMethodNotAllowedNamesTheAllowedMethods(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	r := h.Get("/c/conv-1/v1/chat/completions", key)
	if r.Status != 405 || r.Header.Get("Allow") != "POST" {
		t.Errorf("got status %d, Allow %q, want 405 and Allow POST: %s", r.Status, r.Header.Get("Allow"), r.Body)
	}
	checkErrorShape(t, []byte(r.Body), "invalid_request_error", "method_not_allowed")
}
