package proxy_test

import (
	"bufio"
	"context"
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

// A streamed answer's last events, the last chunk that ends its chunked
// body and the empty trailer after it reach the client's socket in one
// write: fasthttp flushes each apart (the trailer after it closed the
// body stream), and the connection holds them until the last. Without
// the hold every stream had a write of the last chunk alone ("0\r\n");
// without holding past the body stream's close, one of the trailer
// alone ("\r\n"): a write more a stream than the two that do (the
// headers with the first events, the events held for the commit with
// the end; one, here, where the commit does not wait).
func TestStreamEndsInOneWrite(t *testing.T) {
	// One P: the relay ends the stream before fasthttp's goroutine reads
	// its last events, as on recall serve's one core.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var writes, lone atomic.Int64
	h := newHarness(t, e2etest.Options{
		Listener: func(ln net.Listener) net.Listener { return writeCounter{ln, &writes, &lone} },
		// The headers wait for the first events, however slow the
		// machine: they go in one write with them.
		Proxy: func(c *proxy.Config) { c.StreamHeaderHold = time.Minute },
	})
	const streams = 20
	for i := range streams {
		body, err := postPlain(h.URL, e2etest.ChatBody("hello", true))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Fatalf("stream %d: got %q, want a whole stream", i, body)
		}
	}
	if n := lone.Load(); n > 0 {
		t.Errorf("got %d writes of the body's end alone for %d streams, want none", n, streams)
	}
	if n := writes.Load(); n > 2*streams {
		t.Errorf("got %d writes for %d streams, want at most %d: the headers with the first events, the rest with the end", n, streams, 2*streams)
	}
}

// A stream whose upstream sent it at once reaches the client in one
// write, headers, events and end, though its commit outlasts the hold of
// its headers (StreamHeaderHold): the answer is whole, so the headers
// wait for the commit rather than go alone. So does one of many
// kilobytes, each event a chunk of its own as OpenAI's API sends them,
// that came at once: the pump reads the chunks fasthttp holds already
// without a flush between them (pipeline.WaitNotifier), and fasthttp
// writes the client's body in one chunk, not in 4 KiB ones (streambody's
// WriteTo).
func TestStreamCommittedPastTheHeaderHoldInOneWrite(t *testing.T) {
	chunk := func(delta string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	end := []string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		"data: [DONE]\n\n",
	}
	long := []string{chunk(`{"role":"assistant","content":""}`)}
	for range 40 {
		long = append(long, chunk(`{"content":"at once, and at length. "}`))
	}
	for _, tt := range []struct {
		name    string
		events  []string
		chunked bool
	}{
		{"a few events", append([]string{chunk(`{"role":"assistant","content":"at once"}`)}, end...), false},
		{"many events, a chunk each", append(long, end...), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			streamCommittedPastTheHold(t, onceUpstream(t, tt.events, tt.chunked), strings.Join(tt.events, ""))
		})
	}
}

// onceUpstream is an upstream that answers every request with events,
// the whole response in one write: its body length-delimited, or, when
// chunked, each event a chunk.
func onceUpstream(t *testing.T, events []string, chunked bool) string {
	stream := strings.Join(events, "")
	answer := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(stream), stream)
	if chunked {
		var b strings.Builder
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		for _, ev := range events {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(ev), ev)
		}
		b.WriteString("0\r\n\r\n")
		answer = b.String()
	}
	return "http://" + upstreamtest.ServeRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
}

func streamCommittedPastTheHold(t *testing.T, upURL, stream string) {
	var writes, lone atomic.Int64
	fire := make(chan time.Time)
	committing, proceed := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, e2etest.Options{
		Global:   func(g *config.Global) { g.Defaults.Upstream.BaseURL = upURL + "/v1" },
		Listener: func(ln net.Listener) net.Listener { return writeCounter{ln, &writes, &lone} },
		Proxy: func(c *proxy.Config) {
			proxy.WithHeaderHold(fire)(c)
			withCommitHook(func(ctx context.Context) error {
				committing <- struct{}{}
				select {
				case <-proceed:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})(c)
		},
	})
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		body, err := postIn(h.URL, "past-the-hold", e2etest.ChatBody("hello", true))
		done <- result{body, err}
	}()
	deadline := time.After(10 * time.Second)
	select {
	case <-committing:
	case <-deadline:
		t.Fatal("no commit began")
	}
	// The hold ends while the commit runs: the headers are still
	// waiting, for nothing has gone to the client.
	select {
	case fire <- time.Now():
	case <-deadline:
		t.Fatal("the headers did not wait for the first bytes")
	}
	close(proceed)
	var r result
	select {
	case r = <-done:
	case <-deadline:
		t.Fatal("no answer")
	}
	if r.err != nil || !strings.HasSuffix(r.body, "data: [DONE]\n\n") || len(r.body) < len(stream)/2 {
		t.Fatalf("got %q (%v), want a whole stream", r.body, r.err)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("the stream (%d bytes) took %d writes, want one: the headers with the answer", len(r.body), n)
	}
}

// writeCounter is a TCP listener whose connections count the writes
// that reach their sockets (writes), and those of a chunked body's end
// alone (lone: its last chunk, or the trailer after it).
type writeCounter struct {
	net.Listener
	writes, lone *atomic.Int64
}

func (l writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countedConn{c.(*net.TCPConn), l}, nil
}

type countedConn struct {
	*net.TCPConn
	l writeCounter
}

func (c countedConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	if s := string(p); s == "0\r\n" || s == "\r\n" || s == "0\r\n\r\n" {
		c.l.lone.Add(1)
	}
	return c.TCPConn.Write(p)
}
