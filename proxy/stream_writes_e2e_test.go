package proxy_test

import (
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
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
