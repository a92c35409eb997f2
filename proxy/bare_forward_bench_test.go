package proxy_test

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkBareForward is bench/bareproxy's handler in BenchmarkPlainPath's
// harness (the same request, the same instant upstream): the floor that
// Recall's plain path is compared with.
func BenchmarkBareForward(b *testing.B) {
	client := instantUpstream{"application/json", []byte(benchAnswer)}.client()
	client.StreamResponseBody = false
	rc := plainRequest()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		rc.Response.Reset()
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		rc.Request.CopyTo(req)
		req.SetRequestURI("http://127.0.0.1:1" + string(rc.RequestURI()))
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		resp.CopyTo(&rc.Response)
		fasthttp.ReleaseRequest(req)
		fasthttp.ReleaseResponse(resp)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
