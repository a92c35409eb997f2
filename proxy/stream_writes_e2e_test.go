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

// A streamed answer's last events and the last chunk that ends its
// chunked body reach the client's socket in one write: fasthttp flushes
// each apart, and the connection holds the first for the second. Without
// the hold every stream had a write of the last chunk alone ("0\r\n"):
// four writes a stream where the relay holds events for the commit, one
// a third of them.
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
	t.Logf("%.2f writes a stream", float64(writes.Load())/streams)
	if n := lone.Load(); n > 0 {
		t.Errorf("got %d writes of the last chunk alone for %d streams, want none", n, streams)
	}
}

// writeCounter is a TCP listener whose connections count the writes
// that reach their sockets (writes), and those of a chunked body's last
// chunk alone (lone).
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
	if string(p) == "0\r\n" {
		c.l.lone.Add(1)
	}
	return c.TCPConn.Write(p)
}
