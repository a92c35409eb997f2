package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/uplink"
)

// fixedFleet names one owner for every conversation: another replica's
// URL, or this replica when it holds "". The test sets it once it knows
// the URL (after the servers started).
type fixedFleet struct {
	id    string
	owner atomic.Pointer[string]
}

func newFixedFleet(id string) *fixedFleet { return &fixedFleet{id: id} }

func (f *fixedFleet) set(url string) *fixedFleet { f.owner.Store(&url); return f }

func (f *fixedFleet) Owner(string) (string, bool) {
	if u := f.owner.Load(); u != nil && *u != "" {
		return *u, false
	}
	return "", true
}

func (f *fixedFleet) ID() string { return f.id }

var _ proxy.Fleet = (*fixedFleet)(nil)

// replicaWith is a harness whose Config.Fleet is f.
func replicaWith(t *testing.T, f proxy.Fleet, adjust ...func(*e2etest.Options)) *harness {
	t.Helper()
	o := e2etest.Options{Proxy: func(c *proxy.Config) { c.Fleet = f }}
	for _, a := range adjust {
		a(&o)
	}
	return newHarness(t, o)
}

const (
	metricForwarded = `recall_forwarded_requests_total{outcome="forwarded"}`
	metricFallback  = `recall_forwarded_requests_total{outcome="fallback"}`
)

// answerText is the text of a chat completion's answer, whole or
// streamed (its deltas' content, joined).
func answerText(body string) string {
	if !strings.HasPrefix(body, "data:") {
		return gjson.Get(body, "choices.0.message.content").String()
	}
	var b strings.Builder
	for _, line := range strings.Split(body, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
			b.WriteString(gjson.Get(data, "choices.0.delta.content").String())
		}
	}
	return b.String()
}

// ownerRequest is a request as the owner replica received it.
type ownerRequest struct {
	method, uri string
	header      http.Header
	body        string
}

// TestHopSendsTheRequestAsReceived: a request on a conversation another
// replica owns reaches it as the client sent it (method, path with its
// /c/{id} prefix and query, every header but the hop-by-hop ones, the
// client's key among them, the body), marked with the forwarding
// replica's id; the owner's answer, status, headers and bytes, reaches
// the client as the owner sent it, a stream event by event. Nothing of
// it goes upstream or is stored here.
func TestHopSendsTheRequestAsReceived(t *testing.T) {
	got := make(chan ownerRequest, 4)
	more := make(chan struct{})
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- ownerRequest{r.Method, r.RequestURI, r.Header.Clone(), string(b)}
		if !strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Recall-Conversation", "conv-7")
		io.WriteString(w, "data: {\"first\":true}\n\n")
		w.(http.Flusher).Flush()
		<-more // the client read the first event: the stream was not held back
		io.WriteString(w, "data: {\"second\":true}\n\ndata: [DONE]\n\n")
	}))
	defer owner.Close()
	h := replicaWith(t, newFixedFleet("replica-a").set(owner.URL))

	const streamed = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequest("POST", h.URL+"/c/conv-7/v1/chat/completions?trace=1", strings.NewReader(streamed))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Recall-History", "auto")
	req.Header.Set("X-Stainless-Lang", "go")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || first != "data: {\"first\":true}\n" {
		t.Fatalf("first line %q, %v; want the owner's first event before its end", first, err)
	}
	close(more)
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := first+string(rest), "data: {\"first\":true}\n\ndata: {\"second\":true}\n\ndata: [DONE]\n\n"; got != want {
		t.Errorf("client got %q, want the owner's bytes %q", got, want)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Recall-Conversation") != "conv-7" {
		t.Errorf("client got %d %v, want the owner's status and headers", resp.StatusCode, resp.Header)
	}
	o := <-got
	for name, want := range map[string]string{
		"Authorization": "Bearer " + key, "Content-Type": "application/json", "X-Recall-History": "auto",
		"X-Stainless-Lang": "go", uplink.HeaderForwarded: "replica-a",
	} {
		if v := o.header.Get(name); v != want {
			t.Errorf("the owner got %s %q, want %q", name, v, want)
		}
	}
	if o.method != "POST" || o.uri != "/c/conv-7/v1/chat/completions?trace=1" || o.body != streamed {
		t.Errorf("the owner got %s %s %q, want the client's request", o.method, o.uri, o.body)
	}

	// conv-7's exchange ends when its stream's relay does, which may be
	// after the client read the last byte: wait for it before conv-8, so
	// that neither WaitDone skips the other's.
	checkForwarded := func(conv string) {
		t.Helper()
		if d := h.WaitDone(conv); d.Forwarded != owner.URL || d.Committed {
			t.Errorf("%s: exchange done %+v, want forwarded to %s, nothing committed", conv, d, owner.URL)
		}
		if stored := h.Stored(h.PassNamespace(key), conv); len(stored) != 0 {
			t.Errorf("%s: %d messages stored by the forwarding replica, want none", conv, len(stored))
		}
	}
	checkForwarded("conv-7")

	r2 := h.Post("/v1/chat/completions", key, "conv-8", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if r2.Status != http.StatusTooManyRequests || r2.Header.Get("Retry-After") != "7" || r2.Body != `{"error":{"message":"slow down","type":"rate_limit_error"}}` {
		t.Errorf("client got %d %v %q, want the owner's answer", r2.Status, r2.Header, r2.Body)
	}
	if o := <-got; o.header.Get("X-Conversation-Id") != "conv-8" || o.uri != "/v1/chat/completions" {
		t.Errorf("the owner got %s with X-Conversation-ID %q, want the client's", o.uri, o.header.Get("X-Conversation-Id"))
	}
	checkForwarded("conv-8")
	if n := h.Up.Count(); n != 0 {
		t.Errorf("the forwarding replica sent %d requests upstream, want 0", n)
	}
	if got := h.Metric(metricForwarded); got != 2 {
		t.Errorf("%s = %v, want 2", metricForwarded, got)
	}
	if got := h.Metric(`recall_requests_total{route="chat",status="200",tenant="default"}`); got != 0 {
		t.Errorf("forwarded requests counted in recall_requests_total here (%v): the owner counts them", got)
	}
}

// TestHopToTheOwnerReplica: two replicas, each on a store of its own;
// a conversation's turns sent to the one that does not own it, streamed
// or not, are served by the owner, which alone calls its upstream and
// records them, each turn with the history before it.
func TestHopToTheOwnerReplica(t *testing.T) {
	ownerFleet := newFixedFleet("replica-b")
	b := replicaWith(t, ownerFleet)
	a := replicaWith(t, newFixedFleet("replica-a").set(b.URL))
	for i, stream := range []bool{false, true, false, true} {
		text := []string{"one", "two", "three", "four"}[i]
		body := `{"model":"gpt-4o","stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"` + text + `"}]}`
		r := a.Post("/v1/chat/completions", key, "hop-1", body)
		if r.Status != 200 || answerText(r.Body) != "echo: "+text {
			t.Fatalf("turn %d: %d %s, want the owner's answer", i, r.Status, r.Body)
		}
		b.WaitDone("hop-1")
		if got := len(b.Up.Last().Messages); got != 2*i+1 {
			t.Fatalf("turn %d: the owner's upstream got %d messages, want %d (the whole history)", i, got, 2*i+1)
		}
	}
	if n := a.Up.Count(); n != 0 {
		t.Errorf("the forwarding replica's upstream got %d requests, want 0", n)
	}
	want := []string{"user:one", "assistant:echo: one", "user:two", "assistant:echo: two",
		"user:three", "assistant:echo: three", "user:four", "assistant:echo: four"}
	if got := e2etest.Active(b.Stored(b.PassNamespace(key), "hop-1")); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the owner stored %q, want %q", got, want)
	}
	if n := len(a.Stored(a.PassNamespace(key), "hop-1")); n != 0 {
		t.Errorf("the forwarding replica stored %d messages, want 0", n)
	}
	if got := a.Metric(metricForwarded); got != 4 {
		t.Errorf("%s = %v, want 4", metricForwarded, got)
	}
}

// TestForwardedRequestIsServedWhereItLands: while two replicas disagree
// on who owns a conversation (each names the other), a request goes
// from the one it reached to the other, which serves it: a forwarded
// request is never forwarded again. A client's request that says it
// was forwarded is served where it lands too.
func TestForwardedRequestIsServedWhereItLands(t *testing.T) {
	fa, fb := newFixedFleet("replica-a"), newFixedFleet("replica-b")
	a, b := replicaWith(t, fa), replicaWith(t, fb)
	fa.set(b.URL)
	fb.set(a.URL)
	client := &http.Client{Timeout: 20 * time.Second} // a loop would end here, failing
	post := func(h *harness, conv string, headers map[string]string) int {
		req, err := http.NewRequest("POST", h.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Conversation-ID", conv)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if status := post(a, "disputed", nil); status != 200 {
		t.Fatalf("status %d", status)
	}
	if a.Up.Count() != 0 || b.Up.Count() != 1 {
		t.Errorf("upstream calls: a %d, b %d; want b's one", a.Up.Count(), b.Up.Count())
	}
	if a.Metric(metricForwarded) != 1 || b.Metric(metricForwarded) != 0 {
		t.Errorf("forwarded: a %v, b %v; want a 1, b 0", a.Metric(metricForwarded), b.Metric(metricForwarded))
	}
	if status := post(a, "marked", map[string]string{uplink.HeaderForwarded: "a-client"}); status != 200 {
		t.Fatalf("status %d", status)
	}
	if a.Up.Count() != 1 || b.Up.Count() != 1 {
		t.Errorf("upstream calls: a %d, b %d; want one each", a.Up.Count(), b.Up.Count())
	}
	if got := a.Up.Last().Header.Get(uplink.HeaderForwarded); got != "" {
		t.Errorf("%s went upstream: %q", uplink.HeaderForwarded, got)
	}
}

// TestHopFallsBackWhenTheOwnerIsUnreachable: an owner that refuses the
// connection (its port closed: a replica gone) costs the request
// nothing but the attempt: it is served here, and recorded here, and
// the fallback is counted and logged.
func TestHopFallsBackWhenTheOwnerIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	h := replicaWith(t, newFixedFleet("replica-a").set(gone))
	for i, text := range []string{"one", "two"} {
		body := `{"model":"gpt-4o","stream":` + []string{"false", "true"}[i] + `,"messages":[{"role":"user","content":"` + text + `"}]}`
		if r := h.Post("/v1/chat/completions", key, "fb-1", body); r.Status != 200 || answerText(r.Body) != "echo: "+text {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
		if d := h.WaitDone("fb-1"); !d.Committed || d.Forwarded != "" {
			t.Fatalf("turn %d: %+v, want committed here", i, d)
		}
	}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), "fb-1")); len(got) != 4 {
		t.Errorf("stored %q, want both turns", got)
	}
	if f, fb := h.Metric(metricForwarded), h.Metric(metricFallback); f != 0 || fb != 2 {
		t.Errorf("forwarded %v, fallback %v; want 0 and 2", f, fb)
	}
	if !h.Logs.WaitFor("owner replica could not be reached") {
		t.Errorf("no warning in the log:\n%s", h.Logs.String())
	}
}

// TestHopThatTimesOutIsNotServedAgain: an owner that took the request
// and never answered may have served it: past the hop's time the client
// gets 504, and the request is not served here as well.
func TestHopThatTimesOutIsNotServedAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { io.Copy(io.Discard, c); c.Close() }) // reads, never answers
		}
	}()
	h := replicaWith(t, newFixedFleet("replica-a").set("http://"+ln.Addr().String()), func(o *e2etest.Options) {
		o.Global = func(g *config.Global) { g.Defaults.Upstream.Timeout = config.Duration(300 * time.Millisecond) }
		inner := o.Proxy
		o.Proxy = func(c *proxy.Config) { inner(c); c.CommitTimeout = 100 * time.Millisecond }
	})
	r := h.Post("/v1/chat/completions", key, "slow-1", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != http.StatusGatewayTimeout {
		t.Errorf("got %d %s, want 504", r.Status, r.Body)
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("served here too: %d upstream calls, want 0", n)
	}
	if f, fb := h.Metric(metricForwarded), h.Metric(metricFallback); f != 1 || fb != 0 {
		t.Errorf("forwarded %v, fallback %v; want 1 and 0", f, fb)
	}
}

// TestServedHereWithoutMemory: what keeps no memory is served where it
// lands whoever owns the conversation: memory off, no conversation, and
// the routes forwarding leaves alone (count_tokens, pass-through).
func TestServedHereWithoutMemory(t *testing.T) {
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the owner got %s %s", r.Method, r.RequestURI)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer owner.Close()
	h := replicaWith(t, newFixedFleet("replica-a").set(owner.URL))
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for _, tt := range []struct {
		name, path string
		headers    map[string]string
		body       string
	}{
		{"memory off", "/v1/chat/completions", map[string]string{"X-Conversation-ID": "c-1", "X-Recall-History": "off"}, chat},
		{"no conversation", "/v1/chat/completions", nil, chat},
		{"pass-through", "/c/c-1/v1/embeddings", nil, `{"model":"text-embedding-3-small","input":"hi"}`},
		{"count_tokens", "/v1/messages/count_tokens", map[string]string{"X-Conversation-ID": "c-1"}, `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
			for k, v := range tt.headers {
				headers[k] = v
			}
			if r := h.PostHeaders(tt.path, headers, tt.body); r.Status != 200 {
				t.Errorf("got %d %s, want 200 from here", r.Status, r.Body)
			}
		})
	}
	if got := h.Metric(metricForwarded) + h.Metric(metricFallback); got != 0 {
		t.Errorf("%v requests counted as forwarded or fallen back, want 0", got)
	}
}

// TestHopOnEveryMemoryRoute: each protocol's memory route forwards a
// request on a conversation another replica owns, before its body is
// decoded: chat completions, Responses, Messages and Gemini.
func TestHopOnEveryMemoryRoute(t *testing.T) {
	got := make(chan string, 8)
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.RequestURI + " " + r.Header.Get(uplink.HeaderForwarded)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"owner":true}`)
	}))
	defer owner.Close()
	h := replicaWith(t, newFixedFleet("replica-a").set(owner.URL))
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/v1/messages", geminiPath} {
		r := h.Post(path, key, "routes-1", `{"model":"m"}`)
		if r.Status != 200 || r.Body != `{"owner":true}` {
			t.Errorf("%s: got %d %s, want the owner's answer", path, r.Status, r.Body)
			continue
		}
		if o := <-got; o != "POST "+path+" replica-a" {
			t.Errorf("%s: the owner got %q", path, o)
		}
	}
	if n := h.Up.Count(); n != 0 {
		t.Errorf("%d upstream calls here, want 0", n)
	}
}
