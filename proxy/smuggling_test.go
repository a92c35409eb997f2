package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
)

// A request with both Transfer-Encoding and Content-Length is refused
// with 400 and its connection closed: the bytes after its body, which a
// front proxy framing by the other header took as part of the body, are
// never served as a request of their own (request smuggling, RFC 9112
// section 6.3).
func TestBothFramingHeadersAreRefusedAndTheConnectionClosed(t *testing.T) {
	smuggled := "GET /v1/smuggled HTTP/1.1\r\nHost: recall\r\nAuthorization: Bearer " + key + "\r\n\r\n"
	chunked := "0\r\n\r\n" + smuggled
	for _, tc := range []struct {
		name    string
		headers string
		body    string
	}{
		{"content-length then chunked", fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", len(chunked)), chunked},
		{"chunked then content-length", fmt.Sprintf("Transfer-Encoding: chunked\r\nContent-Length: %d\r\n", len(chunked)), chunked},
		{"lowercase names", fmt.Sprintf("transfer-encoding: chunked\r\ncontent-length: %d\r\n", len(chunked)), chunked},
		// fasthttp frames this one by Content-Length; a front proxy may
		// not, and would see the second request where Recall sees a body.
		{"identity and a length covering nothing", "Transfer-Encoding: identity\r\nContent-Length: 0\r\n", smuggled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST /v1/models HTTP/1.1\r\nHost: recall\r\nAuthorization: Bearer %s\r\n%s\r\n%s", key, tc.headers, tc.body)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("read the first answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 400 || !resp.Close {
				t.Errorf("got status %d, close %v, want 400 and the connection closed: %s", resp.StatusCode, resp.Close, body)
			}
			// Nothing more comes: the connection ends without a second answer.
			if second, err := http.ReadResponse(br, nil); err == nil {
				b, _ := io.ReadAll(second.Body)
				t.Errorf("got a second answer %d %s, want the connection closed after the first", second.StatusCode, b)
			} else if err != io.EOF && err != io.ErrUnexpectedEOF {
				t.Errorf("after the first answer got %v, want the connection closed", err)
			}
			for _, r := range h.Up.Requests() {
				if r.Path == "/v1/smuggled" || r.Path == "/v1/models" {
					t.Errorf("the upstream got %s %s, want nothing forwarded", r.Method, r.Path)
				}
			}
			checkErrorShape(t, body, "invalid_request_error", "invalid_framing")
		})
	}

	// A chunked body alone, or a length alone, is served as usual.
	h := newHarness(t, e2etest.Options{})
	const embed = `{"model":"m","input":"x"}`
	for framing, body := range map[string]io.Reader{
		"chunked": io.MultiReader(strings.NewReader(embed)), // a length net/http cannot know
		"length":  strings.NewReader(embed),
	} {
		req, err := http.NewRequest("POST", h.URL+"/v1/embeddings", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: got status %d, want 200", framing, resp.StatusCode)
		}
	}
}
