// Package tracing makes Recall's OpenTelemetry traces: one span per
// exchange on the GenAI semantic conventions, with child spans for the
// conversation's load, its curation, each upstream call (a history-tool
// round's, with the tools Recall ran) and the commit, and
// memory-operation spans for summary jobs and the conversation API's
// searches, forgets and deletes. An exchange's spans are made off the
// request path (queue.go). docs/tracing.md lists them.
//
// Tracing is off unless an OTLP endpoint is set (Start returns nil): a
// nil *Tracer is what the proxy checks, so an untraced exchange does no
// tracer work at all. Spans are made with the official Go SDK and sent
// by its OTLP exporters, which read the standard OTEL_EXPORTER_OTLP_*
// variables themselves (endpoint, headers, timeout, certificates,
// compression); the SDK reads OTEL_TRACES_SAMPLER and OTEL_BSP_* too.
//
// Message content is never an attribute unless the operator opts in with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (ContentVariable):
// spans carry counts, sequence numbers, models and ids only, and with the
// opt-in the conventions' gen_ai.input.messages and
// gen_ai.output.messages on a committed exchange's span.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of Recall's spans.
const scope = "github.com/recallproxy/recall/tracing"

// Tracer makes Recall's spans. A nil *Tracer traces nothing; its methods
// are safe for concurrent use.
type Tracer struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // nil: the caller's (New), not ours to shut down
	q        *queue                   // the exchanges whose spans are still to make
	content  bool                     // record message content (ContentEnabled)
}

// New returns a Tracer making its spans with tp (a test's, with an
// in-memory exporter). Its spans reach tp's processors after a Flush,
// or within a fraction of a second. Shutdown stops the Tracer's
// goroutine and leaves tp to its owner.
func New(tp trace.TracerProvider) *Tracer {
	return newTracer(tp.Tracer(scope), nil)
}

func newTracer(tr trace.Tracer, tp *sdktrace.TracerProvider) *Tracer {
	t := &Tracer{tracer: tr, provider: tp, q: newQueue()}
	go t.q.run()
	return t
}

// Start returns a Tracer exporting over OTLP as the environment says
// (getenv is os.Getenv but in tests), or nil when it sets no endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT) or
// sets OTEL_TRACES_EXPORTER=none. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. The service is named by
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES), "recall" by default.
// The exporters read the rest of their settings from the process's
// environment; ContentVariable opts in to message content. Shutdown
// flushes what is queued.
func Start(ctx context.Context, getenv func(string) string, version string) (*Tracer, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch p := Protocol(getenv); p {
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("tracing: OTLP protocol %q: want http/protobuf or grpc", p)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", "recall")}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	// Later options win: the environment's names over the default.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := newTracer(tp.Tracer(scope), tp)
	t.content = ContentEnabled(getenv)
	return t, nil
}

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set and OTEL_TRACES_EXPORTER is not "none".
func Enabled(getenv func(string) string) bool {
	if strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Protocol is the OTLP protocol the environment names for traces
// (http/protobuf unless it names one).
func Protocol(getenv func(string) string) string {
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if p = strings.TrimSpace(p); p == "" {
		return "http/protobuf"
	}
	return p
}

// Shutdown makes the spans of the exchanges ended so far and ends their
// export, sending what is queued first, bounded by ctx. It does nothing
// for a nil Tracer, and leaves the provider of one made by New to its
// owner.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.q.close(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	if t.provider == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}
