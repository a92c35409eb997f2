package uplink

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/sock/socktest"
)

// Two hundred requests on one connection through the upstream client
// reach its socket with a handful of deadlines, not a few a request (the
// server's side: proxy's TestServerDeadlinesAreCoarse).
func TestDeadlinesReachTheSocketCoarsely(t *testing.T) {
	var upstreamSide atomic.Int64
	dial := proxyDial
	proxyDial = func(addr string) (net.Conn, error) {
		c, err := dial(addr)
		if err != nil {
			return nil, err
		}
		return socktest.Conn{TCPConn: c.(*net.TCPConn), Deadlines: &upstreamSide}, nil
	}
	defer func() { proxyDial = dial }()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// fasthttp's server, as Recall's own sets it up: a read timeout for
	// requests and the silence between them.
	srv := &fasthttp.Server{
		Handler:     func(rc *fasthttp.RequestCtx) { rc.SetBodyString("ok") },
		ReadTimeout: 5 * time.Minute,
	}
	go srv.Serve(ln)
	defer srv.Shutdown()

	client := DefaultClient()
	client.StreamResponseBody = false
	const requests = 200
	start := time.Now()
	for range requests {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + ln.Addr().String() + "/v1/x")
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetBodyString("{}")
		if err := client.DoTimeout(req, resp, 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	client.CloseIdleConnections()
	// Each direction's deadline reaches the socket once, then at most
	// once a second (its slack). Without coarse deadlines: one or two a
	// request.
	if n, most := upstreamSide.Load(), 2*(int64(time.Since(start)/time.Second)+2); n > most {
		t.Errorf("%d deadlines reached the socket for %d requests, want at most %d", n, requests, most)
	}
}
