package proxy_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/tracing"
)

// traced sets a proxy's Tracer to one that makes and batches every span,
// as an exporting one does, and drops them where an exporter would send
// them: what tracing on costs the request path.
func traced(b *testing.B) func(*proxy.Config) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	return func(c *proxy.Config) { c.Tracer = tracing.New(tp) }
}

// BenchmarkChatPathTraced is BenchmarkChatPath's 10 turns with tracing
// on: compare the two for tracing's cost (at most 5%, DESIGN.md section
// 16).
func BenchmarkChatPathTraced(b *testing.B) {
	srv, store := benchServerWith(b, 1100, instantUpstream{"application/json", []byte(benchAnswer)}, traced(b))
	prefill(b, store, 512, 10)
	runChat(b, srv, 512)
}

// BenchmarkPlainPathTraced is BenchmarkPlainPath with tracing on.
func BenchmarkPlainPathTraced(b *testing.B) {
	srv, _ := benchServerWith(b, 16000, instantUpstream{"application/json", []byte(benchAnswer)}, traced(b))
	rc := plainRequest()
	b.ReportAllocs()
	for b.Loop() {
		servePlain(b, srv, rc)
	}
}
