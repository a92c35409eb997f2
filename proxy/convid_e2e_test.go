package proxy_test

import (
	"strconv"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestConversationHeader checks how the conversation header is read: one
// value names the conversation, the same value repeated too, and two
// different values are refused rather than resolved to one of them.
func TestConversationHeader(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name   string
		path   string // default /v1/chat/completions
		values []string
		status int
		conv   string // the conversation recorded ("" for none)
	}{
		{name: "one", values: []string{"hdr-one"}, status: 200, conv: "hdr-one"},
		{name: "same twice", values: []string{"hdr-same", "hdr-same"}, status: 200, conv: "hdr-same"},
		{name: "none", status: 200},
		{name: "empty", values: []string{""}, status: 200},
		{name: "two different", values: []string{"hdr-a", "hdr-b"}, status: 400},
		{name: "same then different", values: []string{"hdr-a", "hdr-a", "hdr-b"}, status: 400},
		{name: "empty then one", values: []string{"", "hdr-a"}, status: 400},
		{name: "invalid", values: []string{"not valid"}, status: 400},
		{name: "prefix and the same header", path: "/c/hdr-p/v1/chat/completions", values: []string{"hdr-p"}, status: 200, conv: "hdr-p"},
		{name: "prefix and another header", path: "/c/hdr-p/v1/chat/completions", values: []string{"hdr-q"}, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.Up.Count()
			path := tt.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			req := "POST " + path + " HTTP/1.1\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n" +
				"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(chat)) + "\r\n"
			for _, v := range tt.values {
				req += "X-Conversation-ID: " + v + "\r\n"
			}
			r := h.RawResult(req + "\r\n" + chat)
			if r.Status != tt.status {
				t.Fatalf("got status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			if got := r.Header.Get("X-Recall-Conversation"); got != tt.conv {
				t.Errorf("got X-Recall-Conversation %q, want %q", got, tt.conv)
			}
			if tt.status != 200 {
				checkErrorShape(t, []byte(r.Body), "invalid_request_error", "invalid_conversation_id")
				if n := h.Up.Count() - before; n != 0 {
					t.Errorf("got %d upstream requests, want none", n)
				}
				for _, v := range tt.values {
					if n := len(h.Stored(h.PassNamespace(key), v)); v != "" && n != 0 {
						t.Errorf("got %d messages stored on %q, want none", n, v)
					}
				}
				return
			}
			h.WaitDone(tt.conv)
			if n := len(h.Stored(h.PassNamespace(key), tt.conv)); tt.conv != "" && n != 2 {
				t.Errorf("got %d messages stored on %q, want 2", n, tt.conv)
			}
		})
	}
}
