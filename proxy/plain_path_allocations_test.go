package proxy_test

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
)

// maxPlainAllocs bounds the allocations of one chat request that names no
// conversation (the proxy-ceiling path: forwarded, nothing recorded). 13
// before the plain path skipped the deadline context, the io.ReadAll
// copies, the per-request metric label lookups and the pass-through
// namespace's hashing; 4 before it validated without building the
// request's view (chat.CheckRequest) and recycled its exchange and body
// buffer; 1 (the answer's reader) before an answer read whole went to the
// client without one. Raise it only with a reason in the commit; lower it
// when the path gets cheaper.
const maxPlainAllocs = 0

// A chat request without history does no more than forward: its
// allocations are bounded, so that a change that makes the plain path
// allocate per request fails here.
func TestPlainPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random: counts mean nothing")
	}
	srv, _ := benchServer(t, 16000)
	rc := plainRequest()
	allocs := testing.AllocsPerRun(200, func() { servePlain(t, srv, rc) })
	t.Logf("%.0f allocations per plain chat request (bound %d)", allocs, maxPlainAllocs)
	if allocs > maxPlainAllocs {
		t.Errorf("a plain chat request allocates %.0f times, past the bound of %d", allocs, maxPlainAllocs)
	}
}

// maxPlainNetAllocs bounds the same request's allocations with the
// upstream across a real connection, through the default clients: 4
// while an answer not asked to stream still streamed (fasthttp's body
// stream and its closures), where the buffering client reads it whole.
const maxPlainNetAllocs = 0

func TestPlainPathAllocationsOverTheNetwork(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random: counts mean nothing")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		rc.SetContentType("application/json")
		rc.SetBodyString(benchAnswer)
	}}
	go up.Serve(ln)
	t.Cleanup(func() { up.Shutdown() })
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = "http://" + ln.Addr().String() + "/v1"
	srv, _ := newServer(t, g, nil) // the default clients
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	rc := plainRequest()
	servePlain(t, srv, rc) // the connection, dialed once
	allocs := testing.AllocsPerRun(200, func() { servePlain(t, srv, rc) })
	t.Logf("%.0f allocations per plain chat request over the network (bound %d)", allocs, maxPlainNetAllocs)
	if allocs > maxPlainNetAllocs {
		t.Errorf("a plain chat request allocates %.0f times over the network, past the bound of %d", allocs, maxPlainNetAllocs)
	}
}

// BenchmarkPlainPath is a chat request without history, in process,
// against an instant upstream: Recall's own cost on the proxy-ceiling
// path (bench/run.sh's wrk rows).
func BenchmarkPlainPath(b *testing.B) {
	srv, _ := benchServer(b, 16000)
	rc := plainRequest()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		servePlain(b, srv, rc)
	}
	// CPU time, not wall time: on a shared machine it is the steadier figure.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func servePlain(tb testing.TB, srv *proxy.Server, rc *fasthttp.RequestCtx) {
	rc.Response.Reset()
	srv.Handle(rc)
	if err := rc.Response.BodyWriteTo(io.Discard); err != nil {
		tb.Fatal(err)
	}
	if got := rc.Response.StatusCode(); got != 200 || string(rc.Response.Body()) != benchAnswer {
		tb.Fatalf("got status %d body %q, want 200 and the upstream's answer", got, rc.Response.Body())
	}
}

// plainRequest is the wrk rows' request: no conversation named.
func plainRequest() *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.SetRequestURI("/v1/chat/completions")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.SetContentType("application/json")
	req.SetBodyString(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence, please."}]}`)
	rc := &fasthttp.RequestCtx{}
	rc.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	return rc
}
