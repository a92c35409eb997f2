// Package tracing makes Recall's OpenTelemetry traces: one span per
// exchange on the GenAI semantic conventions, with child spans for the
// conversation's load, its curation, each upstream call (a history-tool
// round's, with the tools Recall ran) and the commit, and
// memory-operation spans for summary jobs and the conversation API's
// searches, forgets and deletes. docs/tracing.md lists them.
//
// Tracing is off unless an OTLP endpoint is set (Start returns nil): a
// nil *Tracer is what the proxy checks, so an untraced exchange does no
// tracer work at all. The request path only starts an exchange's span
// (its ids, for the upstream's traceparent) and queues the exchange at
// its end; one goroutine per Tracer writes the queued exchanges' spans
// straight into an OTLP ExportTraceServiceRequest's protobuf, batch by
// batch, and sends it (queue.go, encode.go, export.go). There are no
// span objects: the OpenTelemetry SDK's per-span records, attribute
// sets and processor locks cost the proxy more than the request they
// describe. Start reads the standard OTEL_* variables (config.go).
//
// Message content is never an attribute unless the operator opts in with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (ContentVariable):
// spans carry counts, sequence numbers, models and ids only, and with the
// opt-in the conventions' gen_ai.input.messages and
// gen_ai.output.messages on a committed exchange's span.
package tracing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
)

// scopeName is the instrumentation scope of Recall's spans.
const scopeName = "github.com/recallproxy/recall/tracing"

// Tracer makes Recall's spans. A nil *Tracer traces nothing; its methods
// are safe for concurrent use.
type Tracer struct {
	q        *queue // the exchanges whose spans are still to make
	sample   sampler
	content  bool   // record message content (ContentEnabled)
	resource []byte // the Resource message, encoded
	export   func(ctx context.Context, request []byte) error
	onError  func(error)
	close    func() // the exporter's, after the last export
	failed   atomic.Uint64
}

// New returns a Tracer that hands each batch of spans, an OTLP
// ExportTraceServiceRequest encoded in protobuf, to export (a test's
// receiver, a benchmark's sink), as Start's does to its exporter; the
// resource names the service "recall". Every span is sampled unless its
// parent was not. export is called from one goroutine at a time, and
// must not keep request after it returns. Shutdown sends what is queued.
func New(export func(ctx context.Context, request []byte) error) *Tracer {
	return newTracer(settings{batch: defaultBatch, maxQueued: defaultMaxQueued, every: defaultEvery,
		sample: sampler{parentBased: true, ratio: 1}, resource: resourceAttrs(func(string) string { return "" }, "")}, export, nil)
}

func newTracer(s settings, export func(context.Context, []byte) error, closeExporter func()) *Tracer {
	t := &Tracer{sample: s.sample, content: s.content, export: export, onError: s.onError, close: closeExporter}
	for _, a := range s.resource {
		t.resource = a.append(t.resource, fieldResourceAttributes)
	}
	t.q = newQueue(t, s.batch, s.maxQueued, s.every)
	go t.q.run()
	return t
}

// Start returns a Tracer exporting over OTLP as the environment says
// (getenv is os.Getenv but in tests), or nil when it sets no endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT) or
// sets OTEL_TRACES_EXPORTER=none. The protocol is
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL:
// http/protobuf (the default) or grpc. The service is named by
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES), "recall" by default,
// and version is its service.version. config.go lists the rest it reads.
// onError (nil: none) is told of each batch that could not be sent, from
// the Tracer's goroutine. Shutdown sends what is queued.
func Start(ctx context.Context, getenv func(string) string, version string, onError func(error)) (*Tracer, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	s, err := readSettings(getenv, version)
	if err != nil {
		return nil, err
	}
	s.onError = onError
	var ex exporter
	switch p := Protocol(getenv); p {
	case "http/protobuf":
		ex, err = newHTTPExporter(getenv, version)
	case "grpc":
		ex, err = newGRPCExporter(getenv, version)
	default:
		return nil, fmt.Errorf("tracing: OTLP protocol %q: want http/protobuf or grpc", p)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	return newTracer(s, ex.export, ex.close), nil
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

// Shutdown writes the spans of what is queued and sends them, then stops
// the Tracer's goroutine and closes its exporter, bounded by ctx. It does
// nothing for a nil Tracer.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if err := t.q.close(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	if t.close != nil {
		t.close()
	}
	return nil
}

// Failed is how many exchanges and memory operations had their spans
// lost to an export that failed.
func (t *Tracer) Failed() uint64 {
	if t == nil {
		return 0
	}
	return t.failed.Load()
}

// newTraceID and newSpanID are random ids, never all zero. The runtime's
// generator (math/rand/v2's top level) is per-thread ChaCha8 seeded from
// the system: no lock on the request path, and ids as unguessable as
// the SDK's.
func newTraceID() (id [16]byte) {
	for id == ([16]byte{}) {
		a, b := rand.Uint64(), rand.Uint64()
		putUint64(id[:8], a)
		putUint64(id[8:], b)
	}
	return id
}

func newSpanID() (id [8]byte) {
	for id == ([8]byte{}) {
		putUint64(id[:], rand.Uint64())
	}
	return id
}

func putUint64(b []byte, v uint64) {
	_ = b[7]
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}
