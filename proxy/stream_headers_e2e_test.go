package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// firstWrites is a listener whose connections keep each write that
// begins a response.
type firstWrites struct {
	net.Listener
	mu    sync.Mutex
	first []string
}

func (l *firstWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstWriteConn{Conn: c, l: l}, nil
}

func (l *firstWrites) writes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.first...)
}

type firstWriteConn struct {
	net.Conn
	l *firstWrites
}

func (c *firstWriteConn) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "HTTP/1.1 ") {
		c.l.mu.Lock()
		c.l.first = append(c.l.first, string(p))
		c.l.mu.Unlock()
	}
	return c.Conn.Write(p)
}

// A stream's headers go to the client in one write with its first events
// when those are at hand (the fake upstream sends them at once), for a
// recorded stream and a plain one alike.
func TestStreamHeadersGoWithTheFirstEvents(t *testing.T) {
	ln := &firstWrites{}
	h := newHarness(t, e2etest.Options{
		Proxy:    func(c *proxy.Config) { c.StreamHeaderHold = time.Minute },
		Listener: func(l net.Listener) net.Listener { ln.Listener = l; return ln },
	})
	for _, conv := range []string{"headers-1", ""} {
		r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("hello", true))
		if r.Status != 200 || !strings.Contains(r.Body, "data: [DONE]") {
			t.Fatalf("conversation %q: %d %s", conv, r.Status, r.Body)
		}
	}
	writes := ln.writes()
	if len(writes) != 2 {
		t.Fatalf("%d writes began a response, want 2: %q", len(writes), writes)
	}
	for i, w := range writes {
		head, body, _ := strings.Cut(w, "\r\n\r\n")
		if !strings.HasPrefix(head, "HTTP/1.1 200") || !strings.Contains(body, "data: ") {
			t.Errorf("response %d's first write is %q: want the headers and the first events together", i, w)
		}
	}
}

// A stream whose upstream sends its headers and then nothing for a while
// does not keep the client waiting for Recall's: past StreamHeaderHold
// they go alone.
func TestStreamHeadersDoNotWaitForASlowFirstEvent(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"late"},"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer up.Close()
	defer free() // before the upstream's Close, which waits for its handler
	h := newHarness(t, e2etest.Options{
		Global: func(g *config.Global) { g.Defaults.Upstream.BaseURL = up.URL + "/v1" },
		Proxy:  func(c *proxy.Config) { c.StreamHeaderHold = time.Millisecond },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/v1/chat/completions", strings.NewReader(e2etest.ChatBody("hello", true)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Conversation-ID", "slow-1")
	resp, err := http.DefaultClient.Do(req) // returns with the headers
	if err != nil {
		t.Fatalf("no headers while the upstream holds its first event: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want a 200 event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	free()
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			events = append(events, line)
		}
	}
	if len(events) == 0 || events[len(events)-1] != "data: [DONE]" || !strings.Contains(events[0], "late") {
		t.Errorf("got events %q (%v), want the upstream's, through [DONE]", events, sc.Err())
	}
}
