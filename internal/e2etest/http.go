package e2etest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// Result is an answer to a raw HTTP request, its body read whole.
type Result struct {
	Status int
	Header http.Header
	Body   string
	// TransferEncoding is the answer's transfer codings, which net/http
	// takes out of header.
	TransferEncoding []string
}

// Post sends a raw request to Recall, for bodies the SDK would not send.
func (h *Harness) Post(path, key, conv, body string) Result {
	h.T.Helper()
	headers := map[string]string{"Content-Type": "application/json"}
	if key != "" {
		headers["Authorization"] = "Bearer " + key
	}
	if conv != "" {
		headers["X-Conversation-ID"] = conv
	}
	return h.PostHeaders(path, headers, body)
}

// PostDone is Post of an exchange that must be answered 200; it waits
// for the exchange's commit on conv, and fails the test otherwise.
func (h *Harness) PostDone(path, key, conv, body string) {
	h.T.Helper()
	if r := h.Post(path, key, conv, body); r.Status != 200 {
		h.T.Fatalf("POST %s on %s: got %d %s, want 200", path, conv, r.Status, r.Body)
	}
	h.WaitDone(conv)
}

// PostHeaders sends a raw request with the given headers.
func (h *Harness) PostHeaders(path string, headers map[string]string, body string) Result {
	h.T.Helper()
	return h.SendHeaders("POST", path, headers, body)
}

// SendHeaders sends a method request for path to Recall with the given
// headers only, and body unless it is "", and reads the answer whole.
func (h *Harness) SendHeaders(method, path string, headers map[string]string, body string) Result {
	h.T.Helper()
	req := h.newRequest(method, path, body)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, b := h.do(req)
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// Send sends a method request for path to Recall as key (with no
// Authorization when key is ""), with body as JSON unless it is "", and
// reads the answer whole.
func (h *Harness) Send(method, path, key, body string) Result {
	h.T.Helper()
	resp, b := h.do(h.request(method, path, key, body))
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// request is a method request for path to Recall as key (with no
// Authorization when key is ""), with body as JSON unless it is "".
func (h *Harness) request(method, path, key, body string) *http.Request {
	h.T.Helper()
	req := h.newRequest(method, path, body)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// newRequest is a method request for path to Recall with body unless it
// is "", and no header.
func (h *Harness) newRequest(method, path, body string) *http.Request {
	h.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.URL+path, rd)
	if err != nil {
		h.T.Fatal(err)
	}
	return req
}

// Get is Send of a GET, with no body.
func (h *Harness) Get(path, key string) Result { return h.Send("GET", path, key, "") }

// do sends req and reads its answer's body whole.
func (h *Harness) do(req *http.Request) (*http.Response, []byte) {
	h.T.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.T.Fatal(err)
	}
	return resp, b
}

// Raw sends request bytes exactly as given on a new connection to Recall
// and reads one response. It waits for the answer at most 10 seconds.
func (h *Harness) Raw(request string) *http.Response {
	h.T.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		h.T.Fatal(err)
	}
	if _, err := io.WriteString(conn, request); err != nil {
		h.T.Fatal(err)
	}
	method, _, _ := strings.Cut(request, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		h.T.Fatalf("read response: %v", err)
	}
	return resp
}

// RawResult is Raw plus reading the body whole.
func (h *Harness) RawResult(request string) Result {
	h.T.Helper()
	resp := h.Raw(request)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.T.Fatalf("read body: %v", err)
	}
	return Result{Status: resp.StatusCode, Header: resp.Header, Body: string(b), TransferEncoding: resp.TransferEncoding}
}

// Say sends one user message on conv as key with the SDK and waits for
// its commit.
func (h *Harness) Say(key, conv, text string) {
	h.T.Helper()
	c := h.Client(key, conv)
	if _, err := c.Chat.Completions.New(context.Background(), ChatParams(openai.UserMessage(text))); err != nil {
		h.T.Fatal(err)
	}
	h.WaitDone(conv)
}

// Metric returns the value of one sample of GET /metrics (0 if absent).
func (h *Harness) Metric(series string) float64 {
	h.T.Helper()
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err == nil {
				return f
			}
		}
	}
	return 0
}
