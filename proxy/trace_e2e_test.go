package proxy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes every
// ExportTraceServiceRequest posted to /v1/traces and keeps its spans.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: got %s %s, want protobuf on /v1/traces", req.Header.Get("Content-Type"), req.URL.Path)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				t.Errorf("OTLP receiver: %v", err)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			t.Errorf("OTLP receiver: %v", err)
			return
		}
		var ex collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &ex); err != nil {
			t.Errorf("OTLP receiver: decode: %v", err)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			if got := stringAttr(rs.GetResource().GetAttributes(), "service.name"); got != "recall" {
				t.Errorf("OTLP receiver: got service.name %q, want recall", got)
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// take returns the spans received so far.
func (r *otlpReceiver) take() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func stringAttr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

func attrValue(kvs []*commonpb.KeyValue, key string) any {
	for _, kv := range kvs {
		if kv.Key != key {
			continue
		}
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return v.IntValue
		case *commonpb.AnyValue_BoolValue:
			return v.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			return v.DoubleValue
		case *commonpb.AnyValue_ArrayValue:
			var vs []string
			for _, e := range v.ArrayValue.Values {
				vs = append(vs, e.GetStringValue())
			}
			return fmt.Sprint(vs)
		}
	}
	return nil
}

// tracedHarness is a harness whose server exports its spans over
// OTLP/HTTP to a receiver, as the environment of cmd/recall configures
// it; flush sends what is queued (the tracer's shutdown).
func tracedHarness(t *testing.T) (h *harness, flush func() []*tracepb.Span) {
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := tracing.Start(context.Background(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return rcv.URL
		}
		return ""
	}, "test")
	if err != nil || tr == nil {
		t.Fatalf("tracing.Start: %v, %v", tr, err)
	}
	h = newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Tracer = tr }})
	flush = func() []*tracepb.Span {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		return rcv.take()
	}
	return h, flush
}

// A chat turn under a client's traceparent is one "chat {model}" span,
// the client's span's child, with the plan, the upstream call and the
// commit as its children; the upstream request's traceparent names it.
func TestTraceOfChatTurn(t *testing.T) {
	h, flush := tracedHarness(t)
	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key,
		"X-Conversation-ID": "traced-1", "Content-Type": "application/json", "Traceparent": client},
		`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("traced-1")
	upstreamParent := h.Up.Last().Header.Get("Traceparent")
	spans := flush()

	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		t.Logf("span %q id %x parent %x kind %v", s.Name, s.SpanId, s.ParentSpanId, s.Kind)
		for _, kv := range s.Attributes {
			t.Logf("    %s = %v", kv.Key, attrValue(s.Attributes, kv.Key))
		}
	}
	ex := byName["chat gpt-4o-mini"]
	if ex == nil {
		t.Fatalf("no span \"chat gpt-4o-mini\" among %d spans", len(spans))
	}
	if got := hex.EncodeToString(ex.TraceId); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("got trace %s, want the client's", got)
	}
	if got := hex.EncodeToString(ex.ParentSpanId); got != "00f067aa0ba902b7" {
		t.Errorf("got parent %s, want the client's span 00f067aa0ba902b7", got)
	}
	if ex.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("got kind %v, want client", ex.Kind)
	}
	if want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + hex.EncodeToString(ex.SpanId) + "-01"; upstreamParent != want {
		t.Errorf("upstream got traceparent %q, want %q (the exchange's span)", upstreamParent, want)
	}
	for k, want := range map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
		"gen_ai.conversation.id": "traced-1", "gen_ai.conversation.compacted": false,
		"http.response.status_code": int64(200), "recall.exchange.kind": "chat", "recall.messages.new": int64(1),
		"recall.messages.committed": int64(2), "gen_ai.response.finish_reasons": "[stop]",
	} {
		if got := attrValue(ex.Attributes, k); got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	for _, k := range []string{"gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "recall.budget", "recall.tokens.estimated_input"} {
		if attrValue(ex.Attributes, k) == nil {
			t.Errorf("no attribute %s", k)
		}
	}
	for _, name := range []string{tracing.SpanLoad, tracing.SpanUpstream, tracing.SpanCommit} {
		c := byName[name]
		if c == nil {
			t.Errorf("no child span %s", name)
			continue
		}
		if !bytes.Equal(c.ParentSpanId, ex.SpanId) {
			t.Errorf("%s: got parent %x, want the exchange's span %x", name, c.ParentSpanId, ex.SpanId)
		}
		if c.StartTimeUnixNano < ex.StartTimeUnixNano || c.EndTimeUnixNano > ex.EndTimeUnixNano {
			t.Errorf("%s: got %d..%d, want within the exchange's %d..%d", name, c.StartTimeUnixNano, c.EndTimeUnixNano, ex.StartTimeUnixNano, ex.EndTimeUnixNano)
		}
	}
}

// A Responses turn without a client's traceparent starts a trace of its
// own, and is traced as a chat turn is.
func TestTraceOfResponsesTurn(t *testing.T) {
	h, flush := tracedHarness(t)
	r := h.Post("/v1/responses", key, "traced-2", `{"model":"gpt-4o-mini","input":"hello"}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("traced-2")
	upstreamParent := h.Up.Last().Header.Get("Traceparent")
	var ex *tracepb.Span
	for _, s := range flush() {
		if s.Name == "chat gpt-4o-mini" {
			ex = s
		}
	}
	if ex == nil {
		t.Fatal("no span \"chat gpt-4o-mini\"")
	}
	if len(ex.ParentSpanId) != 0 {
		t.Errorf("got parent %x, want a root span", ex.ParentSpanId)
	}
	if want := "00-" + hex.EncodeToString(ex.TraceId) + "-" + hex.EncodeToString(ex.SpanId) + "-01"; upstreamParent != want {
		t.Errorf("upstream got traceparent %q, want %q", upstreamParent, want)
	}
	for k, want := range map[string]any{"recall.ingress": "responses", "gen_ai.conversation.id": "traced-2",
		"gen_ai.provider.name": "openai", "recall.exchange.status": "answered"} {
		if got := attrValue(ex.Attributes, k); got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
}

// A summary job's attempt is an update_memory span of the conversation
// it summarised, with its outcome.
func TestTraceOfSummaryJob(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	h := newHarness(t, e2etest.Options{
		Global: func(g *config.Global) {
			g.Defaults.Summary.Enabled, g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = true, 2, 1
		},
		Summary: func(*summary.Config) {},
		Proxy:   func(c *proxy.Config) { c.Tracer = tracing.New(tp) },
	})
	for i := 1; i <= 3; i++ {
		h.Say(key, "traced-sum", fmt.Sprintf("turn %d", i))
	}
	if d := h.WaitJob("traced-sum"); d.Outcome != summary.Landed {
		t.Fatalf("got job %+v, want one that landed", d)
	}
	var job *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "update_memory summary" {
			job = &s
		}
	}
	if job == nil {
		t.Fatal("no span \"update_memory summary\"")
	}
	got := map[string]any{}
	for _, kv := range job.Attributes {
		got[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, want := range map[string]any{"gen_ai.operation.name": "update_memory", "gen_ai.conversation.id": "traced-sum",
		"recall.summary.outcome": "landed", "recall.summary.attempt": int64(1), "recall.summary.calls": int64(1)} {
		if got[k] != want {
			t.Errorf("%s: got %v, want %v", k, got[k], want)
		}
	}
	if !job.StartTime.Before(job.EndTime) {
		t.Errorf("got span %v to %v, want the attempt's time", job.StartTime, job.EndTime)
	}
}

// The conversation API's forget and delete are delete_memory spans of the
// conversation they changed.
func TestTraceOfForgetAndDelete(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Tracer = tracing.New(tp) }})
	h.Say(key, "traced-del", "one")
	h.Say(key, "traced-del", "two")
	if a := h.API(key, "", "POST", "/recall/v1/conversations/traced-del/forget", `{"instruction":"oldest","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("forget: got %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "DELETE", "/recall/v1/conversations/traced-del", ""); a.Status != 200 {
		t.Fatalf("delete: got %d %s", a.Status, a.Body)
	}
	got := map[string]map[string]any{}
	for _, s := range exp.GetSpans() {
		if len(s.Name) < len("delete_memory") || s.Name[:len("delete_memory")] != "delete_memory" {
			continue
		}
		a := map[string]any{}
		for _, kv := range s.Attributes {
			a[string(kv.Key)] = kv.Value.AsInterface()
		}
		got[s.Name] = a
	}
	for _, name := range []string{"delete_memory forget", "delete_memory delete"} {
		a, ok := got[name]
		if !ok {
			t.Errorf("no span %q among %v", name, got)
			continue
		}
		if a["gen_ai.operation.name"] != "delete_memory" || a["gen_ai.conversation.id"] != "traced-del" || a["http.response.status_code"] != int64(200) {
			t.Errorf("%s: got %v, want delete_memory of traced-del, 200", name, a)
		}
	}
}

// A request that records nothing (no conversation named) is traced too,
// named by the model its body asks for, with no curation figures.
func TestTraceOfPlainRequest(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := tracing.New(tp)
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Tracer = tr }})
	r := h.Post("/v1/chat/completions", key, "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("")
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if s.Name != "chat gpt-4o-mini" {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == "recall.budget" || kv.Key == "gen_ai.conversation.id" {
				t.Errorf("got %s = %v, want none for a request that records nothing", kv.Key, kv.Value.AsInterface())
			}
		}
		return
	}
	t.Errorf("got spans %q, want one named \"chat gpt-4o-mini\"", names)
}
