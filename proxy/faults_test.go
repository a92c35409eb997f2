package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
)

// faultKey is the pass-through credential of the fault tests.
const faultKey = "sk-fault-client"

// faultOutcome is what the client must see for a fault.
type faultOutcome struct {
	status int
	code   string // OpenAI error code of a non-2xx answer ("" when the upstream's own error is passed through)
	typ    string // OpenAI error type of a non-2xx answer
	header map[string]string
	// For 200 streams: whether the relayed stream carries [DONE], and the
	// code of the error event it must end with ("" for none).
	done     bool
	errEvent string
}

// faultCase is a row of the fault matrix: a request (streamed or not)
// whose upstream answers reply, and what the client must see.
type faultCase struct {
	name   string
	stream bool
	reply  upstreamtest.Reply
	global func(*config.Global)
	// refused points the tenant at a closed port after the seed turn
	// (a configuration reload).
	refused bool
	want    faultOutcome
}

// runFaultCase serves tt on a harness of its own, after a seed turn, and
// checks the answer, the exchange's record and that the stored
// conversation is unchanged.
func runFaultCase(t *testing.T, tt faultCase) {
	tenants := &swappableTenants{}
	h := newHarness(t, e2etest.Options{
		Global: tt.global,
		Proxy: func(c *proxy.Config) {
			c.StreamIdleTimeout = 200 * time.Millisecond
			tenants.set.Store(c.Tenants.Current())
			c.Tenants = tenants
		},
	})
	conv := "fault-1"
	ns := h.PassNamespace(faultKey)
	h.seedTurn(conv)
	if tt.refused {
		g := config.DefaultGlobal()
		g.Defaults.Upstream.BaseURL = "http://" + closedAddr(t) + "/v1"
		tenants.set.Store(loadTenants(t, g).Set)
	}
	storedBefore := len(h.Stored(ns, conv))

	h.Up.Enqueue(tt.reply)
	if tt.reply.Fault == upstreamtest.FaultResetBeforeHeaders {
		// A reused connection reset before a byte of the answer
		// is tried once more (uplink.Do): the fault holds for both.
		h.Up.Enqueue(tt.reply)
	}
	resp := h.send(faultKey, conv, e2etest.ChatBody("this one fails", tt.stream))
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read answer: got error %v, want a cleanly ended body (%d bytes read)", err, len(body))
	}
	if resp.StatusCode != tt.want.status {
		t.Fatalf("got status %d, want %d: %s", resp.StatusCode, tt.want.status, body)
	}
	for k, v := range tt.want.header {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("header %s: got %q, want %q", k, got, v)
		}
	}
	if tt.want.status != 200 {
		checkErrorShape(t, body, tt.want.typ, tt.want.code)
	} else {
		checkAbortedStream(t, h, resp, body, tt.want)
	}
	// Every exchange, whatever its end, is accounted for once:
	// wait for it (a relay finishes after the last byte).
	d := h.WaitDone(conv)
	if d.Committed || (d.Err == nil && d.Status < 400) {
		t.Fatalf("got %+v, want an uncommitted exchange with its reason", d)
	}
	if tt.want.status != 200 && d.Status != tt.want.status {
		t.Errorf("exchange reported status %d, want %d", d.Status, tt.want.status)
	}
	if got := len(h.Stored(ns, conv)); got != storedBefore {
		t.Errorf("got %d stored messages, want %d (unchanged)", got, storedBefore)
	}
}

// checkAbortedStream checks a streamed answer (body) that a fault cut
// before its commit: the upstream's events relayed decoded, no finish
// and, as want says, [DONE] and the error event it ends with.
func checkAbortedStream(t *testing.T, h *harness, resp *http.Response, body []byte, want faultOutcome) {
	t.Helper()
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "text/event-stream") {
		t.Errorf("got content type %q, want text/event-stream", got)
	}
	// A recorded stream is relayed decoded, compressed or not.
	if got := resp.Header.Get("Content-Encoding"); got != "" {
		t.Errorf("got Content-Encoding %q, want none", got)
	}
	if !strings.HasPrefix(string(body), "data: ") {
		t.Errorf("got stream %q, want the relayed events", body)
	}
	if got := strings.Contains(string(body), "data: [DONE]"); got != want.done {
		t.Errorf("stream has [DONE]: got %v, want %v: %q", got, want.done, body)
	}
	if strings.Contains(string(body), `"finish_reason":"`) {
		t.Errorf("an uncommitted stream relayed a finish_reason: %q", body)
	}
	if want.errEvent != "" {
		events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
		last := strings.TrimPrefix(events[len(events)-1], "data: ")
		checkErrorShape(t, []byte(last), "upstream_error", want.errEvent)
	}
	if got := h.Metric(`recall_streams_aborted_total{tenant="default"}`); got != 1 {
		t.Errorf("recall_streams_aborted_total %v, want 1", got)
	}
}

// TestUpstreamFaultsStoreNothing is the fault matrix: every upstream fault
// gets a clear answer (an OpenAI-shaped error, or a cleanly ended stream
// that lacks [DONE]) and leaves the conversation's stored messages as they
// were. After the matrix no goroutine is left behind.
func TestUpstreamFaultsStoreNothing(t *testing.T) {
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	before := runtime.NumGoroutine()

	short := func(d time.Duration) func(*config.Global) {
		return func(g *config.Global) { g.Defaults.Upstream.Timeout = config.Duration(d) }
	}

	tests := []faultCase{
		{name: "500", reply: upstreamtest.Reply{Status: 500},
			want: faultOutcome{status: 500, typ: "server_error"}},
		{name: "500 stream", stream: true, reply: upstreamtest.Reply{Status: 500},
			want: faultOutcome{status: 500, typ: "server_error"}},
		{name: "429 retry-after", reply: upstreamtest.Reply{Status: 429, RetryAfter: "7"},
			want: faultOutcome{status: 429, code: "rate_limit_exceeded", typ: "requests", header: map[string]string{"Retry-After": "7"}}},
		{name: "429 retry-after stream", stream: true, reply: upstreamtest.Reply{Status: 429, RetryAfter: "7"},
			want: faultOutcome{status: 429, code: "rate_limit_exceeded", typ: "requests", header: map[string]string{"Retry-After": "7"}}},
		{name: "connection refused", refused: true,
			want: faultOutcome{status: 502, code: "upstream_unavailable", typ: "upstream_error"}},
		{name: "connection refused stream", stream: true, refused: true,
			want: faultOutcome{status: 502, code: "upstream_unavailable", typ: "upstream_error"}},
		{name: "reset before headers", reply: upstreamtest.Reply{Fault: upstreamtest.FaultResetBeforeHeaders},
			want: faultOutcome{status: 502, code: "upstream_unavailable", typ: "upstream_error"}},
		{name: "reset before headers stream", stream: true, reply: upstreamtest.Reply{Fault: upstreamtest.FaultResetBeforeHeaders},
			want: faultOutcome{status: 502, code: "upstream_unavailable", typ: "upstream_error"}},
		{name: "body cut mid-way", reply: upstreamtest.Reply{Fault: upstreamtest.FaultCutMidStream},
			want: faultOutcome{status: 502, code: "upstream_unavailable", typ: "upstream_error"}},
		{name: "stream cut mid-way", stream: true, reply: upstreamtest.Reply{Fault: upstreamtest.FaultCutMidStream, Chunks: 8},
			want: faultOutcome{status: 200, errEvent: "upstream_stream_incomplete"}},
		{name: "gzip stream cut mid-way", stream: true, reply: upstreamtest.Reply{Fault: upstreamtest.FaultCutMidStream, Chunks: 8, Gzip: true},
			want: faultOutcome{status: 200, errEvent: "upstream_stream_incomplete"}},
		{name: "stream stalled past idle timeout", stream: true, reply: upstreamtest.Reply{Fault: upstreamtest.FaultStallMidStream, Chunks: 8},
			want: faultOutcome{status: 200, errEvent: "upstream_stream_incomplete"}},
		{name: "upstream timeout", global: short(300 * time.Millisecond), reply: upstreamtest.Reply{Delay: time.Minute},
			want: faultOutcome{status: 504, code: "upstream_timeout", typ: "upstream_error"}},
		{name: "upstream timeout stream", stream: true, global: short(300 * time.Millisecond), reply: upstreamtest.Reply{Delay: time.Minute},
			want: faultOutcome{status: 504, code: "upstream_timeout", typ: "upstream_error"}},
		{name: "malformed json", reply: upstreamtest.Reply{Fault: upstreamtest.FaultMalformedJSON},
			want: faultOutcome{status: 502, code: "upstream_bad_response", typ: "upstream_error"}},
		{name: "malformed json gzip", reply: upstreamtest.Reply{Fault: upstreamtest.FaultMalformedJSON, Gzip: true},
			want: faultOutcome{status: 502, code: "upstream_bad_response", typ: "upstream_error"}},
		// The answer cannot be rebuilt past a malformed event: nothing is
		// stored, so nothing after it (finish_reason, [DONE]) is relayed,
		// and the stream ends with an error event.
		{name: "malformed json stream", stream: true, reply: upstreamtest.Reply{Fault: upstreamtest.FaultMalformedJSON, Chunks: 8},
			want: faultOutcome{status: 200, errEvent: "upstream_bad_response"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runFaultCase(t, tt) })
	}

	t.Run("slow client", func(t *testing.T) {
		h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.StreamIdleTimeout = 200 * time.Millisecond }})
		conv := "slow-1"
		ns := h.PassNamespace(faultKey)
		h.seedTurn(conv)
		// An answer much larger than the socket buffers, so that the relay
		// blocks on the client while the upstream has more to send.
		content := strings.Repeat("0123456789abcdef", 1<<19) // 8 MiB
		h.Up.Enqueue(upstreamtest.Reply{Content: content, Chunks: 64})
		resp := h.send(faultKey, conv, e2etest.ChatBody("a long answer please", true))
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("got status %d, want 200", resp.StatusCode)
		}
		var got strings.Builder
		buf := make([]byte, 64<<10)
		for reads := 0; ; reads++ {
			// The client pauses longer than the stream idle timeout
			// between reads; the upstream is not idle, the client is slow.
			if reads < 3 {
				time.Sleep(300 * time.Millisecond)
			}
			n, err := resp.Body.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read: %v after %d bytes", err, got.Len())
			}
		}
		if !strings.HasSuffix(got.String(), "data: [DONE]\n\n") {
			t.Fatalf("got a stream of %d bytes without [DONE], want the whole answer", got.Len())
		}
		if d := h.WaitDone(conv); !d.Committed {
			t.Fatalf("slow client's turn not committed: %v", d.Err)
		}
		msgs := h.Stored(ns, conv)
		var stored struct{ Content string }
		if err := json.Unmarshal(msgs[3].Raw, &stored); err != nil {
			t.Fatal(err)
		}
		if len(stored.Content) != len(content) || stored.Content != content {
			t.Errorf("stored answer of %d bytes, want %d", len(stored.Content), len(content))
		}
	})

	// A client that leaves mid-stream gets nothing stored, whatever its
	// protocol: the chat relay and the seam's (here a Responses and a
	// Messages client over the chat upstream) look at the connection
	// before the commit, since their writes to it are buffered.
	for _, c := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", e2etest.ChatBody("leaving early", true)},
		{"responses", "/v1/responses", `{"model":"gpt-4o-mini","input":"leaving early","stream":true}`},
		{"messages", "/v1/messages", `{"model":"gpt-4o-mini","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"leaving early"}]}`},
	} {
		t.Run("client disconnect mid-stream/"+c.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conv := "gone-" + c.name
			ns := h.PassNamespace(faultKey)
			h.seedTurn(conv)
			storedBefore := len(h.Stored(ns, conv))
			h.Up.Enqueue(upstreamtest.Reply{Fault: upstreamtest.FaultStallMidStream, Chunks: 16})
			// A raw connection, so that the client is really gone (its
			// socket closed) before the upstream goes on: an HTTP client's
			// Body.Close closes the socket later, from another goroutine.
			conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: recall\r\nAuthorization: Bearer %s\r\nAnthropic-Version: 2023-06-01\r\n"+
				"X-Conversation-ID: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.path, faultKey, conv, len(c.body), c.body)
			br := bufio.NewReader(conn)
			status, err := br.ReadString('\n')
			if err != nil || !strings.Contains(status, " 200 ") {
				t.Fatalf("status line: got %q, %v; want 200", status, err)
			}
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(line, "data: ") {
					break // the first event
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := h.Up.WaitStalled(ctx, 1); err != nil {
				t.Fatal(err)
			}
			conn.Close() // the client leaves
			waitPeerClosed(t, conn)
			h.Up.Release()
			if d := h.WaitDone(conv); d.Committed || d.Status != 499 {
				t.Fatalf("got %+v, want an uncommitted exchange with status 499", d)
			}
			if got := h.Metric(`recall_streams_aborted_total{tenant="default"}`); got != 1 {
				t.Errorf("recall_streams_aborted_total %v, want 1", got)
			}
			if got := len(h.Stored(ns, conv)); got != storedBefore {
				t.Errorf("got %d stored messages, want %d (unchanged)", got, storedBefore)
			}
			if logs := h.Logs.String(); !strings.Contains(logs, `"status":499`) {
				t.Errorf("got no request logged with status 499 in %s", logs)
			}
		})
	}

	// Every harness of the matrix is closed: the goroutines it started
	// must be gone once the client's idle connections are closed.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	after := runtime.NumGoroutine()
	for after > before+3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		after = runtime.NumGoroutine()
	}
	t.Logf("goroutines: %d before the matrix, %d after", before, after)
	if testing.Verbose() || after > before+3 {
		buf := make([]byte, 1<<20)
		if after > before+3 {
			t.Errorf("got %d goroutines after the matrix, want at most %d:\n%s", after, before+3, buf[:runtime.Stack(buf, true)])
		} else {
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
		}
	}
}

// swappableTenants is a tenant set a test can replace, as a hot reload does.
type swappableTenants struct{ set atomic.Pointer[config.Set] }

func (s *swappableTenants) Current() *config.Set { return s.set.Load() }

// send posts body to the chat endpoint and returns the response unread.
// It asks for identity encoding so that the client sees the bytes Recall
// relayed, compressed or not.
func (h *harness) send(key, conv, body string) *http.Response {
	h.T.Helper()
	req, err := http.NewRequest("POST", h.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		h.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Authorization", "Bearer "+key)
	if conv != "" {
		req.Header.Set("X-Conversation-ID", conv)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	return resp
}

// seedTurn stores one whole turn on conv, so that a fault has something to
// leave unchanged.
func (h *harness) seedTurn(conv string) {
	h.T.Helper()
	r := h.Post("/v1/chat/completions", faultKey, conv, e2etest.ChatBody("a turn before the fault", false))
	if r.Status != 200 {
		h.T.Fatalf("seed turn: got status %d, want 200: %s", r.Status, r.Body)
	}
	if got := len(h.Stored(h.PassNamespace(faultKey), conv)); got != 2 {
		h.T.Fatalf("seed turn: got %d stored messages, want 2", got)
	}
	h.WaitDone(conv) // consume its event
}

// checkErrorShape checks that body is OpenAI's error shape with the given
// type and (if not empty) code.
func checkErrorShape(t *testing.T, body []byte, typ, code string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message *string `json:"message"`
			Type    *string `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == nil || e.Error.Type == nil {
		t.Fatalf("got body %q, want OpenAI's error shape", body)
	}
	if *e.Error.Message == "" {
		t.Errorf("got an empty error message in %s", body)
	}
	if *e.Error.Type != typ {
		t.Errorf("got error type %q, want %q", *e.Error.Type, typ)
	}
	if code != "" && (e.Error.Code == nil || *e.Error.Code != code) {
		t.Errorf("got error code in %s, want %q", body, code)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
