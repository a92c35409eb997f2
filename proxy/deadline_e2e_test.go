package proxy_test

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/sock/socktest"
)

// The server Recall serves on gives its clients' sockets a deadline about
// once a second, not one or two a request (package sock).
func TestServerDeadlinesAreCoarse(t *testing.T) {
	var deadlines atomic.Int64
	h := newHarness(t, e2etest.Options{
		Listener: func(ln net.Listener) net.Listener { return socktest.CountDeadlines(ln, &deadlines) },
	})
	const requests = 200
	start := time.Now()
	for i := range requests {
		if _, err := postPlain(h.URL, e2etest.ChatBody("hello", i%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	// One keep-alive connection (http.DefaultClient's): its read deadline
	// once, then at most once a second (the slack). Without coarse
	// deadlines: two a request.
	if n, most := deadlines.Load(), int64(time.Since(start)/time.Second)+2; n > most {
		t.Errorf("%d deadlines reached the sockets for %d requests, want at most %d", n, requests, most)
	}
}
