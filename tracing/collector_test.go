package tracing_test

import (
	"context"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/tracing/tracingtest"
)

// collector decodes each request a Tracer exports with the OTLP
// protobuf types, as a collector would, and keeps it.
type collector struct {
	mu   sync.Mutex
	reqs []*collectortrace.ExportTraceServiceRequest
	err  error
}

func (c *collector) export(_ context.Context, request []byte) error {
	var req collectortrace.ExportTraceServiceRequest
	err := proto.Unmarshal(request, &req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.err = err
		return err
	}
	c.reqs = append(c.reqs, &req)
	return nil
}

// spans is every span received so far, in order.
func (c *collector) spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range c.reqs {
		out = append(out, tracingtest.SpansOf(req)...)
	}
	return out
}

func newTracer(t *testing.T) (*tracing.Tracer, *collector) {
	t.Helper()
	col := &collector{}
	tr := tracing.New(col.export)
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, col
}

// spans exports the spans of the exchanges ended so far and returns
// every span col holds.
func spans(t *testing.T, tr *tracing.Tracer, col *collector) []*tracepb.Span {
	t.Helper()
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if col.err != nil {
		t.Fatalf("decode: %v", col.err)
	}
	return col.spans()
}

// attrs are s's attributes by key: a string, int64, bool, float64 or
// []string.
func attrs(s *tracepb.Span) map[string]any {
	return values(s.GetAttributes())
}

func values(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_ArrayValue:
			var vs []string
			for _, e := range v.ArrayValue.Values {
				vs = append(vs, e.GetStringValue())
			}
			m[kv.Key] = vs
		}
	}
	return m
}

func start(s *tracepb.Span) time.Time { return time.Unix(0, int64(s.StartTimeUnixNano)) }
func end(s *tracepb.Span) time.Time   { return time.Unix(0, int64(s.EndTimeUnixNano)) }
