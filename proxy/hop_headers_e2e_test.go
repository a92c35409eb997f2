package proxy_test

import (
	"bufio"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/uplink"
)

// hopTransport adds to every upstream answer a header that the answer's
// Connection headers name (hop-by-hop, RFC 9110 section 7.6.1) and one
// that they do not. It re-reads the answer's header block with the lines
// added, as they would have come on the wire (fasthttp's Add keeps one
// Connection header).
type hopTransport struct{}

func (hopTransport) RoundTrip(hc *fasthttp.HostClient, req *fasthttp.Request, resp *fasthttp.Response) (bool, error) {
	retry, err := fasthttp.DefaultTransport.RoundTrip(hc, req, resp)
	if err != nil {
		return retry, err
	}
	raw := resp.Header.Header()
	block := string(raw[:len(raw)-2]) + "Connection: keep-alive, X-Upstream-Hop\r\n" +
		"Connection: x-upstream-hop-2\r\n" +
		"X-Upstream-Hop: for the proxy\r\n" +
		"X-Upstream-Hop-2: for the proxy\r\n" +
		"X-Upstream-Kept: for the client\r\n\r\n"
	resp.Header.Reset()
	return false, resp.Header.Read(bufio.NewReader(strings.NewReader(block)))
}

// TestHeadersNamedInConnectionAreDropped checks both directions: the
// headers a client's Connection header names do not reach the upstream,
// and those an upstream's names do not reach the client.
func TestHeadersNamedInConnectionAreDropped(t *testing.T) {
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) {
		c.Client = uplink.DefaultClient()
		c.Client.Transport = hopTransport{}
	}})
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
			r := h.RawResult(req)
			if r.Status != 200 {
				t.Fatalf("got status %d, want 200: %s", r.Status, r.Body)
			}
			up := h.Up.Last().Header
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
				if got := r.Header.Get(name); got != want {
					t.Errorf("client got %s %q, want %q", name, got, want)
				}
			}
		})
	}
}
