package uplink

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// scriptedUpstream is a raw HTTP/1.1 server whose every request is
// handled as its script says, by the connection's number and the
// request's number on it (both from 0): it answers, closes without a
// byte, or writes the start of a status line and closes.
type scriptedUpstream struct {
	ln     net.Listener
	script func(conn, req int) string // "answer", "close", "partial"
	idle   time.Duration              // >0: close a connection idle this long
	before func(conn, req int)        // if set, runs before each request is handled

	mu     sync.Mutex
	got    []string // "conn/req" of each request read whole
	closed chan int // a connection the server closed for idleness
	conns  int
}

// newScriptedUpstream starts a scriptedUpstream; set, if given, sets its
// other fields before it serves.
func newScriptedUpstream(t *testing.T, script func(conn, req int) string, set ...func(*scriptedUpstream)) *scriptedUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &scriptedUpstream{ln: ln, script: script, closed: make(chan int, 16)}
	for _, f := range set {
		f(u)
	}
	t.Cleanup(func() { ln.Close() })
	go u.serve()
	return u
}

func (u *scriptedUpstream) serve() {
	for {
		c, err := u.ln.Accept()
		if err != nil {
			return
		}
		u.mu.Lock()
		n := u.conns
		u.conns++
		u.mu.Unlock()
		go u.handle(c, n)
	}
}

func (u *scriptedUpstream) handle(c net.Conn, n int) {
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; ; i++ {
		if u.idle > 0 {
			_ = c.SetReadDeadline(time.Now().Add(u.idle))
			if _, err := r.Peek(1); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					c.Close()
					u.closed <- n
				}
				return
			}
			_ = c.SetReadDeadline(time.Time{})
		}
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		u.mu.Lock()
		u.got = append(u.got, string(rune('0'+n))+"/"+string(rune('0'+i)))
		u.mu.Unlock()
		if u.before != nil {
			u.before(n, i)
		}
		switch u.script(n, i) {
		case "close":
			return
		case "partial":
			_, _ = io.WriteString(c, "HTTP/1.1 200")
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
			return
		}
	}
}

func (u *scriptedUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

func (u *scriptedUpstream) post(t *testing.T, client *fasthttp.Client) error {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod("POST")
	req.SetRequestURI("http://" + u.ln.Addr().String() + "/v1/chat/completions")
	req.SetBodyString(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	err := Do(client, req, resp, 5*time.Second)
	if err == nil && resp.StatusCode() != 200 {
		t.Fatalf("status %d", resp.StatusCode())
	}
	return err
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReusedConnectionClosedUnansweredIsSentAgain: the upstream closes a
// reused connection on the request it just read, without a byte of an
// answer (its idle timeout crossing the request on the wire): the
// request is sent once more, on a new connection, and answered.
func TestReusedConnectionClosedUnansweredIsSentAgain(t *testing.T) {
	u := newScriptedUpstream(t, func(conn, req int) string {
		if conn == 0 && req == 1 {
			return "close"
		}
		return "answer"
	})
	client := BufferingClient(1 << 20)
	for i := range 2 {
		if err := u.post(t, client); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got, want := u.requests(), []string{"0/0", "0/1", "1/0"}; !equalStrings(got, want) {
		t.Errorf("the upstream read %v, want %v", got, want)
	}
}

// TestNoSecondAttemptAfterAByteOrOnANewConnection: a request is sent
// again only when a reused connection closed before any byte of the
// answer: not when the answer had begun, and not when the connection was
// opened for it (the upstream may have acted on it).
func TestNoSecondAttemptAfterAByteOrOnANewConnection(t *testing.T) {
	t.Run("a byte came back", func(t *testing.T) {
		u := newScriptedUpstream(t, func(conn, req int) string {
			if req == 1 {
				return "partial"
			}
			return "answer"
		})
		client := BufferingClient(1 << 20)
		if err := u.post(t, client); err != nil {
			t.Fatal(err)
		}
		if err := u.post(t, client); err == nil {
			t.Fatal("a cut status line was taken for an answer")
		}
		if got, want := u.requests(), []string{"0/0", "0/1"}; !equalStrings(got, want) {
			t.Errorf("the upstream read %v, want %v", got, want)
		}
	})
	t.Run("a new connection", func(t *testing.T) {
		u := newScriptedUpstream(t, func(conn, req int) string { return "close" })
		if err := u.post(t, BufferingClient(1<<20)); err == nil {
			t.Fatal("no error from a connection closed unanswered")
		}
		if got, want := u.requests(), []string{"0/0"}; !equalStrings(got, want) {
			t.Errorf("the upstream read %v, want %v", got, want)
		}
	})
}

// TestIdleConnectionsClosedByTheUpstreamAreNotWrittenTo: several pooled
// connections the upstream closed while they sat idle are each found
// closed before a request is written on them: the next request goes on
// a new connection, and no request reaches a closed one.
func TestIdleConnectionsClosedByTheUpstreamAreNotWrittenTo(t *testing.T) {
	// Three connections, by three requests held until all three arrived.
	var arrived sync.WaitGroup
	arrived.Add(3)
	u := newScriptedUpstream(t, func(conn, req int) string { return "answer" }, func(u *scriptedUpstream) {
		u.idle = 150 * time.Millisecond
		u.before = func(conn, req int) {
			if req == 0 && conn < 3 {
				arrived.Done()
				arrived.Wait()
			}
		}
	})
	client := BufferingClient(1 << 20)
	var dialedMu sync.Mutex
	var dialed []*trackedConn
	client.Dial = func(addr string) (net.Conn, error) {
		c, err := dialUpstream(addr)
		if err == nil {
			dialedMu.Lock()
			dialed = append(dialed, c.(*trackedConn))
			dialedMu.Unlock()
		}
		return c, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() { errs <- u.post(t, client) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	u.mu.Lock()
	opened := u.conns
	u.mu.Unlock()
	for range opened {
		select {
		case <-u.closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the upstream did not close its idle connections")
		}
	}
	// The upstream's closes reach this side's sockets (a loaded kernel
	// may take a moment): each pooled connection can see it.
	dialedMu.Lock()
	conns := slices.Clone(dialed)
	dialedMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range conns {
		for !idleConnDead(c.Conn) {
			if time.Now().After(deadline) {
				t.Fatal("a connection the upstream closed does not show it")
			}
			runtime.Gosched()
		}
	}
	if err := u.post(t, client); err != nil {
		t.Fatalf("after the upstream closed %d idle connections: %v", opened, err)
	}
	got := u.requests()
	if len(got) != opened+1 || got[opened] != string(rune('0'+opened))+"/0" {
		t.Errorf("the upstream read %v: want %d requests, the last on a new connection", got, opened+1)
	}
}
