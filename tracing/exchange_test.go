package tracing_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
)

// clientTraceparent is a client's span: the exchange's parent.
const clientTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func TestExchangeSpan(t *testing.T) {
	tr, exp := newTracer(t)
	t0 := time.Unix(1_800_000_000, 0)
	x := tr.Begin([]byte(clientTraceparent), nil, t0)
	tp := string(x.Traceparent())
	if len(tp) != 55 || tp[3:35] != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("got traceparent %q, want one in the client's trace", tp)
	}
	x.PlanStart, x.Loaded, x.PlanEnd = t0.Add(time.Millisecond), t0.Add(2*time.Millisecond), t0.Add(3*time.Millisecond)
	x.CommitStart, x.CommitEnd = t0.Add(50*time.Millisecond), t0.Add(52*time.Millisecond)
	x.ResponseModel, x.FinishReason = "gpt-4o-2024-08-06", "stop"
	r := &history.ExchangeRecord{ID: "xch_1", Kind: "chat", Ingress: "chat.completions", Upstream: "chat.completions",
		Model: "gpt-4o", Status: "answered", HTTPStatus: 200, Budget: 1000, Calibration: 1,
		Tokens:   history.ExchangeTokens{EstimatedInput: 120, CalibratedInput: 120, ReportedInput: 118, Output: 9, Cached: 64},
		Summary:  &history.SummaryUse{Through: 7, Tokens: 40},
		Included: []history.Span{{From: 8, To: 11}}, NewMessages: 1,
		Dropped:   []history.Dropped{{From: 0, To: 3, Reason: "summarised", Turns: 2}},
		Cut:       []history.CutResult{{Seq: 9, CharsBefore: 900, CharsAfter: 100}},
		Committed: []history.Span{{From: 12, To: 13}},
	}
	x.End(tracing.Ended{Record: r, Conversation: "c1", Tenant: "acme", End: t0.Add(60 * time.Millisecond),
		Calls: []tracing.Call{{Sent: t0.Add(4 * time.Millisecond), FirstByte: t0.Add(20 * time.Millisecond), Done: t0.Add(49 * time.Millisecond)}}})

	got := spans(t, tr, exp)
	if len(got) != 5 {
		t.Fatalf("got %d spans, want 5 (load, curate, upstream, commit, exchange)", len(got))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range got {
		byName[s.Name] = s
	}
	ex, ok := byName["chat gpt-4o"]
	if !ok {
		t.Fatalf("no span named %q among %v", "chat gpt-4o", got)
	}
	if got := hex.EncodeToString(ex.ParentSpanId); got != "b7ad6b7169203331" {
		t.Errorf("got parent %s, want the client's span b7ad6b7169203331", got)
	}
	if ex.Flags&0x300 != 0x300 || ex.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("got flags %#x kind %v, want a remote parent and a client span", ex.Flags, ex.Kind)
	}
	if got := hex.EncodeToString(ex.SpanId); tp[36:52] != got {
		t.Errorf("got traceparent %q, want it to name the exchange's span %s", tp, got)
	}
	if !start(ex).Equal(t0) || !end(ex).Equal(t0.Add(60*time.Millisecond)) {
		t.Errorf("got span %v to %v, want the exchange's times", start(ex), end(ex))
	}
	a := attrs(ex)
	for k, want := range map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
		"gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.conversation.id": "c1",
		"gen_ai.usage.input_tokens": int64(118), "gen_ai.usage.output_tokens": int64(9),
		"gen_ai.usage.cache_read.input_tokens": int64(64), "gen_ai.conversation.compacted": true,
		"http.response.status_code": int64(200), "recall.tokens.estimated_input": int64(120), "recall.exchange.kind": "chat",
		"recall.messages.committed": int64(2), "recall.summary.through": int64(7), "recall.tenant": "acme",
		"recall.thread": "main",
	} {
		if got := a[k]; got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	c := attrs(byName[tracing.SpanCurate])
	for k, want := range map[string]any{"recall.budget": int64(1000), "recall.messages.included": int64(4),
		"recall.turns.dropped": int64(2), "recall.tool_results.cut": int64(1), "recall.tokens.calibrated_input": int64(120)} {
		if got := c[k]; got != want {
			t.Errorf("curate: %s: got %v, want %v", k, got, want)
		}
		if _, on := a[k]; on {
			t.Errorf("%s is on the exchange's span too, want it on the curate span alone", k)
		}
	}
	if got := a["gen_ai.response.finish_reasons"]; fmt.Sprint(got) != "[stop]" {
		t.Errorf("finish reasons: got %q, want [stop]", got)
	}
	if ex.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("got status %v, want unset for an answered exchange", ex.Status)
	}
	for _, name := range []string{tracing.SpanLoad, tracing.SpanCurate, tracing.SpanUpstream, tracing.SpanCommit} {
		c, ok := byName[name]
		if !ok {
			t.Errorf("no child span %s", name)
			continue
		}
		if hex.EncodeToString(c.ParentSpanId) != hex.EncodeToString(ex.SpanId) {
			t.Errorf("%s: got parent %x, want the exchange's span %x", name, c.ParentSpanId, ex.SpanId)
		}
	}
	if up := byName[tracing.SpanUpstream]; !start(up).Equal(t0.Add(4*time.Millisecond)) || attrs(up)["recall.upstream.first_byte_ms"] != int64(16) {
		t.Errorf("upstream call: got start %v first byte %v, want its times", start(up), attrs(up)["recall.upstream.first_byte_ms"])
	}
}

// The cache creation tokens an Anthropic upstream reports are on the
// exchange's span, counted in gen_ai.usage.input_tokens as the
// conventions ask; an upstream of a protocol that reports none has no such
// attribute, where 0 would claim it wrote nothing.
func TestExchangeSpanCacheCreation(t *testing.T) {
	tr, exp := newTracer(t)
	t0 := time.Unix(1_800_000_000, 0)
	tokens := history.ExchangeTokens{ReportedInput: 1100, Output: 7, Cached: 1000, CacheCreation: 40}
	for _, upstream := range []string{"messages", "chat.completions"} {
		x := tr.Begin(nil, nil, t0)
		tk := tokens
		if upstream != "messages" {
			tk.CacheCreation = 0
		}
		x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Upstream: upstream, Model: upstream, Status: "answered",
			HTTPStatus: 200, Tokens: tk}, End: t0.Add(time.Second)})
	}
	byModel := map[string]map[string]any{}
	for _, s := range spans(t, tr, exp) {
		byModel[strings.TrimPrefix(s.Name, "chat ")] = attrs(s)
	}
	if len(byModel["messages"]) == 0 || len(byModel["chat.completions"]) == 0 {
		t.Fatalf("got spans of %v, want one per upstream", byModel)
	}
	a := byModel["messages"]
	for k, want := range map[string]any{"gen_ai.provider.name": "anthropic", "gen_ai.usage.input_tokens": int64(1100),
		"gen_ai.usage.cache_read.input_tokens": int64(1000), "gen_ai.usage.cache_creation.input_tokens": int64(40)} {
		if got := a[k]; got != want {
			t.Errorf("Messages upstream: %s: got %v, want %v", k, got, want)
		}
	}
	if got, on := byModel["chat.completions"]["gen_ai.usage.cache_creation.input_tokens"]; on {
		t.Errorf("chat upstream: got gen_ai.usage.cache_creation.input_tokens %v, want none", got)
	}
}

func TestExchangeSpanFailed(t *testing.T) {
	tr, exp := newTracer(t)
	t0 := time.Now()
	x := tr.Begin(nil, nil, t0)
	x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Upstream: "messages", Status: "upstream_error",
		HTTPStatus: 502, Error: "upstream_unavailable"}, End: t0.Add(time.Second)})
	got := spans(t, tr, exp)
	if len(got) != 1 {
		t.Fatalf("got %d spans, want the exchange's alone", len(got))
	}
	s := got[0]
	if s.Name != "chat" || len(s.ParentSpanId) != 0 {
		t.Errorf("got %q with parent %x, want \"chat\", a root", s.Name, s.ParentSpanId)
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.GetMessage() != "upstream_unavailable" || attrs(s)["error.type"] != "upstream_unavailable" {
		t.Errorf("got status %v error.type %v, want an error upstream_unavailable", s.Status, attrs(s)["error.type"])
	}
	if got := attrs(s)["gen_ai.provider.name"]; got != "anthropic" {
		t.Errorf("got provider %q, want anthropic for a Messages upstream", got)
	}
}

func TestNilTracer(t *testing.T) {
	var tr *tracing.Tracer
	if x := tr.Begin([]byte(clientTraceparent), nil, time.Now()); x != nil {
		t.Errorf("got %v, want no span from a nil Tracer", x)
	}
	tr.Memory(tracing.Memory{Operation: tracing.OperationUpdateMemory})
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracing.Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStartRefusesUnknownProtocol(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
	tr, err := tracing.Start(t.Context(), func(k string) string { return env[k] }, "", nil)
	if err == nil || tr != nil {
		t.Errorf("got %v, %v, want an error for http/json", tr, err)
	}
}

// A traceparent the W3C format does not allow starts a new trace, as
// the propagator would; a valid one is continued with its tracestate.
func TestBeginReadsOnlyAValidTraceparent(t *testing.T) {
	const tid = "0af7651916cd43dd8448eb211c80319c"
	for _, tc := range []struct {
		name, header string
		continued    bool
	}{
		{"valid", "00-" + tid + "-b7ad6b7169203331-01", true},
		{"not sampled", "00-" + tid + "-b7ad6b7169203331-00", true},
		{"future version, longer", "01-" + tid + "-b7ad6b7169203331-01-more", true},
		{"version 00, longer", "00-" + tid + "-b7ad6b7169203331-01-more", false},
		{"version ff", "ff-" + tid + "-b7ad6b7169203331-01", false},
		{"uppercase", "00-" + strings.ToUpper(tid) + "-b7ad6b7169203331-01", false},
		{"zero trace id", "00-00000000000000000000000000000000-b7ad6b7169203331-01", false},
		{"zero span id", "00-" + tid + "-0000000000000000-01", false},
		{"short", "00-" + tid + "-b7ad6b71692033-01", false},
		{"bad separator", "00_" + tid + "-b7ad6b7169203331-01", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, exp := newTracer(t)
			x := tr.Begin([]byte(tc.header), []byte("vendor=v1"), time.Now())
			x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Status: "answered", HTTPStatus: 200}, End: time.Now()})
			got := spans(t, tr, exp)
			if want := map[bool]int{true: 1, false: 0}[tc.name != "not sampled"]; len(got) != want {
				t.Fatalf("got %d spans, want %d (an unsampled parent's exchange sends none)", len(got), want)
			}
			tp := string(x.Traceparent())
			if continued := tp[3:35] == tid; continued != tc.continued {
				t.Errorf("got traceparent %q, continued %v, want %v", tp, continued, tc.continued)
			}
			if tc.name == "valid" && got[0].TraceState != "vendor=v1" {
				t.Errorf("got tracestate %q, want the client's", got[0].TraceState)
			}
		})
	}
}

// With the plan's load and curation timed apart, the exchange has a
// recall.curate child with the budget and the turns kept, dropped and
// cut, after a recall.load child that ends where it starts.
func TestCurateSpan(t *testing.T) {
	tr, exp := newTracer(t)
	t0 := time.Unix(1_800_000_000, 0)
	x := tr.Begin(nil, nil, t0)
	x.PlanStart, x.Loaded, x.PlanEnd = t0.Add(time.Millisecond), t0.Add(2*time.Millisecond), t0.Add(3*time.Millisecond)
	x.KeptTurns = 3
	x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Status: "answered", HTTPStatus: 200, Budget: 900,
		Included: []history.Span{{From: 4, To: 9}}, Summary: &history.SummaryUse{Through: 3, Tokens: 20},
		Dropped: []history.Dropped{{From: 0, To: 3, Reason: "summarised", Turns: 2}, {From: 4, To: 5, Reason: "budget"}},
		Cut:     []history.CutResult{{Seq: 7}, {Seq: 8}}}, Conversation: "c1", End: t0.Add(10 * time.Millisecond)})
	byName := map[string]*tracepb.Span{}
	for _, s := range spans(t, tr, exp) {
		byName[s.Name] = s
	}
	c, ok := byName[tracing.SpanCurate]
	if !ok {
		t.Fatalf("no %s span among %v", tracing.SpanCurate, byName)
	}
	for k, want := range map[string]any{"recall.budget": int64(900), "recall.turns.kept": int64(3), "recall.turns.dropped": int64(3),
		"recall.tool_results.cut": int64(2), "recall.messages.included": int64(6), "gen_ai.conversation.compacted": true} {
		if got := attrs(c)[k]; got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	if !start(c).Equal(x.Loaded) || !end(c).Equal(x.PlanEnd) || !end(byName[tracing.SpanLoad]).Equal(x.Loaded) {
		t.Errorf("got curate %v..%v, load ending %v, want them split at %v", start(c), end(c), end(byName[tracing.SpanLoad]), x.Loaded)
	}
}

// Spans are made off the caller's goroutine: Shutdown makes those of
// every exchange ended before it, without a Flush, and a Tracer shut
// down makes no more.
func TestShutdownMakesQueuedSpans(t *testing.T) {
	col := &collector{}
	tr := tracing.New(col.export)
	const n = 100 // past the batch that wakes the goroutine, and a rest
	for range n {
		x := tr.Begin(nil, nil, time.Now())
		x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Status: "answered", HTTPStatus: 200}, End: time.Now()})
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(col.spans()); got != n {
		t.Errorf("got %d spans after Shutdown, want %d", got, n)
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Errorf("Flush after Shutdown: got %v, want nil", err)
	}
	if d := tr.Dropped(); d != 0 {
		t.Errorf("got %d dropped, want none", d)
	}
}
