package proxy_test

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/tracing"
)

// traced sets a proxy's Tracer to one that writes every span into OTLP
// requests, as an exporting one does, and drops each request where an
// exporter would send it: what tracing on costs but the sending
// (BenchmarkExport in package tracing measures that too). flush exports
// every span of the exchanges served so far, so that the CPU time
// measured after it includes them.
func traced(b *testing.B) (adjust func(*proxy.Config), flush func()) {
	tr := tracing.New(func(context.Context, []byte) error { return nil })
	b.Cleanup(func() { tr.Shutdown(context.Background()) })
	return func(c *proxy.Config) { c.Tracer = tr }, func() {
		if err := tr.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChatPathTraced is BenchmarkChatPath's 10 turns with tracing
// on: compare the two for tracing's cost (at most 5%, DESIGN.md section
// 16). Its cpu-ns/op is the process's CPU time, the spans' work off the
// request path included.
func BenchmarkChatPathTraced(b *testing.B) {
	adjust, flush := traced(b)
	srv, store := benchServerWith(b, 1100, instantUpstream{"application/json", []byte(benchAnswer)}, adjust)
	prefill(b, store, 512, 10)
	cpu0 := cpuTime()
	runChat(b, srv, 512)
	flush()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPlainPathTraced is BenchmarkPlainPath with tracing on.
func BenchmarkPlainPathTraced(b *testing.B) {
	adjust, flush := traced(b)
	srv, _ := benchServerWith(b, 16000, instantUpstream{"application/json", []byte(benchAnswer)}, adjust)
	rc := plainRequest()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		servePlain(b, srv, rc)
	}
	flush()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
