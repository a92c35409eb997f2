package proxy_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestPathsAreRoutedAndForwardedAsSent sends request targets that a
// decoding or normalising proxy gets wrong. A conversation prefix is
// checked before anything else reads the path, a dot segment never
// reaches the upstream, and a pass-through path arrives upstream exactly
// as the client sent it, or is refused with 400 when it cannot be.
func TestPathsAreRoutedAndForwardedAsSent(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name   string
		method string
		target string
		conv   string // X-Conversation-ID, if any
		status int
		code   string // error code of a refusal
		// upstream is the target the upstream must get ("" when the
		// request must not reach it).
		upstream string
		// recorded is the conversation the answer names ("" for none).
		recorded string
	}{
		{name: "dot-dot prefix", method: "POST", target: "/c/../v1/chat/completions",
			status: 400, code: "invalid_conversation_id"},
		{name: "encoded dot-dot prefix", method: "POST", target: "/c/%2e%2e/v1/chat/completions",
			status: 400, code: "invalid_conversation_id"},
		{name: "mixed dot-dot prefix", method: "POST", target: "/c/%2E./v1/chat/completions",
			status: 400, code: "invalid_conversation_id"},
		{name: "dot prefix", method: "POST", target: "/c/./v1/chat/completions",
			status: 400, code: "invalid_conversation_id"},
		{name: "dot-dot after the prefix", method: "POST", target: "/c/abc/../v1/chat/completions",
			status: 400, code: "invalid_path"},
		{name: "dot-dot header", method: "POST", target: "/v1/chat/completions", conv: "..",
			status: 400, code: "invalid_conversation_id"},
		{name: "dot header", method: "POST", target: "/v1/chat/completions", conv: ".",
			status: 400, code: "invalid_conversation_id"},
		{name: "encoded prefix id", method: "POST", target: "/c/run%3A7/v1/chat/completions",
			status: 200, upstream: "/v1/chat/completions", recorded: "run:7"},
		{name: "dots inside an id", method: "POST", target: "/c/a..b/v1/chat/completions",
			status: 200, upstream: "/v1/chat/completions", recorded: "a..b"},
		{name: "encoded question mark", method: "GET", target: "/v1/models%3Fapi-version=evil",
			status: 200, upstream: "/v1/models%3Fapi-version=evil"},
		{name: "encoded hash", method: "GET", target: "/v1/files/file-1%23x/content",
			status: 404, upstream: "/v1/files/file-1%23x/content"},
		{name: "query as sent", method: "GET", target: "/v1/files?purpose=batch&x=%20y%2Bz&&",
			status: 200, upstream: "/v1/files?purpose=batch&x=%20y%2Bz&&"},
		{name: "double slash kept", method: "GET", target: "/v1//models",
			status: 200, upstream: "/v1//models"},
		{name: "prefix before a pass-through path", method: "GET", target: "/c/abc/v1/batches%2Fx",
			status: 200, upstream: "/v1/batches%2Fx"},
		{name: "encoded line break", method: "GET", target: "/v1/models%0d%0aX-Evil:%201",
			status: 400, code: "invalid_path"},
		{name: "encoded nul", method: "GET", target: "/v1/files/a%00b",
			status: 400, code: "invalid_path"},
		{name: "fragment", method: "GET", target: "/v1/models#x",
			status: 400, code: "invalid_path"},
		{name: "dot-dot in a pass-through path", method: "GET", target: "/v1/models/../../admin",
			status: 400, code: "invalid_path"},
		{name: "encoded dot-dot in a pass-through path", method: "GET", target: "/v1/%2e%2E/admin",
			status: 400, code: "invalid_path"},
		{name: "dot in a pass-through path", method: "GET", target: "/v1/./models",
			status: 400, code: "invalid_path"},
		{name: "malformed escape", method: "GET", target: "/v1/models/%zz",
			status: 400, code: "invalid_path"},
		{name: "byte outside the path characters", method: "GET", target: "/v1/models/a\"b",
			status: 400, code: "invalid_path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := h.Up.Count()
			req := tt.method + " " + tt.target + " HTTP/1.1\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n"
			if tt.conv != "" {
				req += "X-Conversation-ID: " + tt.conv + "\r\n"
			}
			if tt.method == "POST" {
				req += "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(chat)) + "\r\n\r\n" + chat
			} else {
				req += "\r\n"
			}
			r := h.RawResult(req)
			if tt.recorded != "" {
				h.WaitDone(tt.recorded)
			}
			if r.Status != tt.status {
				t.Fatalf("got status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			if tt.code != "" {
				checkErrorShape(t, []byte(r.Body), "invalid_request_error", tt.code)
			}
			if got := r.Header.Get("X-Recall-Conversation"); got != tt.recorded {
				t.Errorf("got X-Recall-Conversation %q, want %q", got, tt.recorded)
			}
			if tt.upstream == "" {
				if n := h.Up.Count() - before; n != 0 {
					t.Errorf("got %d upstream requests, want none", n)
				}
				return
			}
			if got := h.Up.Last().RequestURI; got != tt.upstream {
				t.Errorf("upstream got target %q, want %q", got, tt.upstream)
			}
			if got := h.Up.Last().Header.Get("Authorization"); !strings.HasSuffix(got, key) {
				t.Errorf("upstream got Authorization %q, want the client's key", got)
			}
		})
	}
}
