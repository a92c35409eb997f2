package proxy_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/proxy"
)

// hopTransport adds to every upstream answer a header that the answer's
// Connection header names (hop-by-hop, RFC 9110 section 7.6.1) and one
// that it does not.
type hopTransport struct{ next http.RoundTripper }

func (t hopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Header.Add("Connection", "keep-alive, X-Upstream-Hop")
	resp.Header.Add("Connection", "x-upstream-hop-2")
	resp.Header.Set("X-Upstream-Hop", "for the proxy")
	resp.Header.Set("X-Upstream-Hop-2", "for the proxy")
	resp.Header.Set("X-Upstream-Kept", "for the client")
	return resp, nil
}

// TestHeadersNamedInConnectionAreDropped checks both directions: the
// headers a client's Connection header names do not reach the upstream,
// and those an upstream's names do not reach the client.
func TestHeadersNamedInConnectionAreDropped(t *testing.T) {
	h := newHarness(t, harnessOptions{proxy: func(c *proxy.Config) { c.Transport = hopTransport{proxy.DefaultTransport()} }})
	chat := `{"messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, request string
	}{
		{"pass-through", "GET /v1/batches HTTP/1.1\r\n"},
		{"chat", "POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(chat)) + "\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.request + "Host: recall.test\r\nAuthorization: Bearer " + key + "\r\n" +
				"Connection: keep-alive, X-Client-Hop\r\n" +
				"Connection: x-client-hop-2\r\n" +
				"X-Client-Hop: for the proxy\r\n" +
				"X-Client-Hop-2: for the proxy\r\n" +
				"X-Client-Kept: for the upstream\r\n\r\n"
			if tt.name == "chat" {
				req += chat
			}
			r := h.rawResult(req)
			if r.status != 200 {
				t.Fatalf("got status %d, want 200: %s", r.status, r.body)
			}
			up := h.up.Last().Header
			for name, want := range map[string]string{
				"X-Client-Hop":   "",
				"X-Client-Hop-2": "",
				"X-Client-Kept":  "for the upstream",
				"Authorization":  "Bearer " + key,
			} {
				if got := up.Get(name); got != want {
					t.Errorf("upstream got %s %q, want %q", name, got, want)
				}
			}
			for name, want := range map[string]string{
				"X-Upstream-Hop":   "",
				"X-Upstream-Hop-2": "",
				"X-Upstream-Kept":  "for the client",
			} {
				if got := r.header.Get(name); got != want {
					t.Errorf("client got %s %q, want %q", name, got, want)
				}
			}
		})
	}
}
