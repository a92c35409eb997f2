package proxy_test

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/proxy"
)

// maxPlainAllocs bounds the allocations of one chat request that names no
// conversation (the proxy-ceiling path: forwarded, nothing recorded):
// the answer's reader here (a fasthttp client reading from the network
// streams the body instead, through closures of its own). 13 before the
// plain path skipped the deadline context, the io.ReadAll copies, the
// per-request metric label lookups and the pass-through namespace's
// hashing; 4 before it validated without building the request's view
// (chat.CheckRequest) and recycled its exchange and body buffer. Raise it
// only with a reason in the commit; lower it when the path gets cheaper.
const maxPlainAllocs = 1

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
