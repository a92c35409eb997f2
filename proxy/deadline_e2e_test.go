package proxy_test

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
)

// The server Recall serves on gives its clients' sockets a deadline about
// once a second, not one or two a request (deadline.go).
func TestServerDeadlinesAreCoarse(t *testing.T) {
	var deadlines atomic.Int64
	h := newHarness(t, e2etest.Options{
		Listener: func(ln net.Listener) net.Listener { return proxy.CountDeadlines(ln, &deadlines) },
	})
	const requests = 200
	for i := range requests {
		if _, err := postPlain(h.URL, e2etest.ChatBody("hello", i%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	// One keep-alive connection (http.DefaultClient's), a run well under a
	// second: a deadline or two, a few more if the run straddles a slack.
	if n := deadlines.Load(); n > 8 {
		t.Errorf("%d deadlines reached the sockets for %d requests, want a handful", n, requests)
	}
}
