package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
)

func optionBase(url string) option.RequestOption { return option.WithBaseURL(url) }

type httpResult struct {
	status int
	header http.Header
	body   string
	// transferEncoding is the answer's transfer codings, which net/http
	// takes out of header.
	transferEncoding []string
}

// post sends a raw request to Recall, for bodies the SDK would not send.
func (h *harness) post(path, key, conv, body string) httpResult {
	h.t.Helper()
	headers := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	if conv != "" {
		headers["X-Conversation-ID"] = conv
	}
	return h.postHeaders(path, headers, body)
}

// postHeaders sends a raw request with the given headers.
func (h *harness) postHeaders(path string, headers map[string]string, body string) httpResult {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// raw sends request bytes exactly as given on a new connection to Recall
// and reads one response. It waits for the answer at most 10 seconds.
func (h *harness) raw(request string) *http.Response {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		h.t.Fatal(err)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		h.t.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		h.t.Fatalf("read response: %v", err)
	}
	return resp
}

// rawResult is raw plus reading the body whole.
func (h *harness) rawResult(request string) httpResult {
	h.t.Helper()
	resp := h.raw(request)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read body: %v", err)
	}
	return httpResult{status: resp.StatusCode, header: resp.Header, body: string(b), transferEncoding: resp.TransferEncoding}
}
