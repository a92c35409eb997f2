package proxy_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
)

// multipartBody is an upload whose bytes a multipart parser would not
// reproduce: the file part comes first and has its own content type.
const multipartBody = "--XyZ\r\n" +
	"Content-Disposition: form-data; name=\"file\"; filename=\"a.jsonl\"\r\n" +
	"Content-Type: application/jsonl\r\n\r\n" +
	"{\"a\":1}\n\r\n" +
	"--XyZ\r\n" +
	"Content-Disposition: form-data; name=\"purpose\"\r\n\r\n" +
	"batch\r\n" +
	"--XyZ--\r\n"

// TestPassthroughForwardsRequestsAsSent sends raw requests of every shape
// to pass-through paths and checks what the upstream got: the method, the
// target, the body byte for byte, and the framing (no body, a length, or
// chunked).
func TestPassthroughForwardsRequestsAsSent(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	tests := []struct {
		name    string
		request string // without the Host and Authorization lines
		status  int
		body    string // what the upstream must get
		framing string // "none", "length" or "chunked"
	}{
		{name: "get without a body", request: "GET /v1/models HTTP/1.1\r\n\r\n",
			status: 200, framing: "none"},
		{name: "get with a query", request: "GET /v1/files?purpose=batch&limit=2 HTTP/1.1\r\n\r\n",
			status: 200, framing: "none"},
		{name: "stored chat completions list", request: "GET /v1/chat/completions?limit=2 HTTP/1.1\r\n\r\n",
			status: 200, framing: "none"},
		{name: "head", request: "HEAD /v1/models HTTP/1.1\r\n\r\n",
			status: 200, framing: "none"},
		{name: "options", request: "OPTIONS /v1/models HTTP/1.1\r\n\r\n",
			status: 200, framing: "none"},
		{name: "delete without a body", request: "DELETE /v1/files/file-404 HTTP/1.1\r\n\r\n",
			status: 404, framing: "none"},
		{name: "post with an empty body", request: "POST /v1/unknown/thing HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
			status: 200, framing: "length"},
		{name: "post with a body", request: "POST /v1/embeddings HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"input\":\"hi\"}\n",
			status: 200, body: "{\"input\":\"hi\"}\n", framing: "length"},
		{name: "streamed post to an unknown path",
			request: "POST /v1/unknown/stream HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"5\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n",
			status: 200, body: "hello world!", framing: "chunked"},
		{name: "multipart upload",
			request: "POST /v1/files HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: " +
				strconv.Itoa(len(multipartBody)) + "\r\n\r\n" + multipartBody,
			status: 200, body: multipartBody, framing: "length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, rest, _ := strings.Cut(tt.request, "\r\n")
			req := line + "\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n" + rest
			r := h.RawResult(req)
			if r.Status != tt.status {
				t.Fatalf("got status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			last := h.Up.Last()
			method, target, _ := strings.Cut(strings.TrimSuffix(line, " HTTP/1.1"), " ")
			if last.Method != method || last.RequestURI != target {
				t.Errorf("upstream got %s %s, want %s %s", last.Method, last.RequestURI, method, target)
			}
			if string(last.Body) != tt.body {
				t.Errorf("upstream got body %q, want %q", last.Body, tt.body)
			}
			framing := "none"
			if last.Header.Get("Content-Length") != "" {
				framing = "length"
			}
			if len(last.TransferEncoding) > 0 {
				framing = "chunked"
			}
			if framing != tt.framing {
				t.Errorf("upstream got framing %s, want %s", framing, tt.framing)
			}
		})
	}
}

// TestPassthroughKeepsTheAnswersLength checks that an answer the upstream
// sent with a Content-Length reaches the client with it, for HEAD too
// (where the length is the point of asking).
func TestPassthroughKeepsTheAnswersLength(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	get := h.RawResult("GET /v1/models HTTP/1.1\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n\r\n")
	head := h.RawResult("HEAD /v1/models HTTP/1.1\r\nHost: recall.test\r\nAuthorization: Bearer " + key + "\r\n\r\n")
	want := strconv.Itoa(len(get.Body))
	tests := []struct {
		name string
		r    e2etest.Result
		body int
	}{
		{"get", get, len(get.Body)},
		{"head", head, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Header.Get("Content-Length"); tt.r.Status != 200 || got != want {
				t.Errorf("got status %d, Content-Length %q, want 200, %q", tt.r.Status, got, want)
			}
			if te := tt.r.TransferEncoding; len(te) > 0 {
				t.Errorf("got Transfer-Encoding %q, want none", te)
			}
			if len(tt.r.Body) != tt.body {
				t.Errorf("got a body of %d bytes, want %d", len(tt.r.Body), tt.body)
			}
		})
	}
}
