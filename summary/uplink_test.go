package summary

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
)

// closingUpstream is a raw HTTP/1.1 chat-completions upstream that reads
// the second request on its first connection whole and closes the
// connection without a byte of answer: an upstream's idle timeout
// crossing the request on the wire. Every other request is answered.
type closingUpstream struct {
	ln net.Listener

	mu     sync.Mutex
	closed bool
	conns  []net.Conn
	reqs   []string // "conn/req" of each request read whole
}

func newClosingUpstream(t *testing.T) *closingUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &closingUpstream{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		u.mu.Lock()
		u.closed = true
		for _, c := range u.conns {
			c.Close() // the client keeps its idle ones for seconds
		}
		u.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			n := len(u.conns)
			u.conns = append(u.conns, c)
			if u.closed {
				c.Close()
			}
			u.mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); u.serve(c, n) }()
		}
	}()
	return u
}

func (u *closingUpstream) url() string { return "http://" + u.ln.Addr().String() + "/v1" }

func (u *closingUpstream) serve(c net.Conn, conn int) {
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		u.mu.Lock()
		u.reqs = append(u.reqs, fmt.Sprintf("%d/%d", conn, i))
		u.mu.Unlock()
		if conn == 0 && i == 1 {
			return // closed unanswered
		}
		body := fmt.Sprintf(`{"id":"chatcmpl-%d-%d","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"summary %d/%d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50,"completion_tokens":4,"total_tokens":54}}`, conn, i, conn, i)
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return
		}
	}
}

func (u *closingUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.reqs...)
}

// TestSummariserCallSurvivesAnIdleCloseOnTheWire: a summariser call
// whose reused connection the upstream closes before any byte of the
// answer is sent again on a fresh connection, as the proxy's own calls
// are (uplink.Do): the summary lands instead of failing its job. A POST
// is not replayable to net/http's client, which the summariser used
// before, so there the second summary failed with the closed connection.
func TestSummariserCallSurvivesAnIdleCloseOnTheWire(t *testing.T) {
	up := newClosingUpstream(t)
	f := newFixture(t, func(p *config.Policy) { p.Summary.Model = "gpt-4o" })
	f.set = acmeTenants(t, func() config.Global {
		g := config.DefaultGlobal()
		g.Defaults.Upstream.BaseURL = up.url()
		g.Defaults.Upstream.APIKey = config.Secret("sk-upstream")
		g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = 4, 1
		return g
	}())
	m := f.manager()
	k := history.Key{Tenant: "acme", Conversation: "c"}
	word := func(i int) string { return fmt.Sprintf("fact %d", i) }
	f.write("c", 1, 6, word)
	if _, err := m.Summarize(context.Background(), k); err != nil {
		t.Fatalf("first summary: %v", err)
	}
	f.write("c", 7, 6, word)
	meta, err := m.Summarize(context.Background(), k)
	if err != nil {
		t.Fatalf("second summary, its connection closed unanswered: %v", err)
	}
	if meta.Summary == nil || meta.Summary.Text != "summary 1/0" {
		t.Errorf("summary %+v, want the fresh connection's answer", meta.Summary)
	}
	if got, want := fmt.Sprint(up.requests()), "[0/0 0/1 1/0]"; got != want {
		t.Errorf("upstream read requests %s, want %s: the second once on the closed connection, once on a fresh one", got, want)
	}
}
