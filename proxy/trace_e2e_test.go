package proxy_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/tracing/tracingtest"
)

// receivedSpans are the spans rcv received, each request checked to be
// protobuf posted to /v1/traces by the "recall" service.
func receivedSpans(t *testing.T, rcv *tracingtest.Receiver) []*tracepb.Span {
	t.Helper()
	for _, req := range rcv.Requests() {
		if req.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: got %s %s, want protobuf on /v1/traces", req.Header.Get("Content-Type"), req.Path)
		}
		for _, rs := range req.Export.ResourceSpans {
			if got := stringAttr(rs.GetResource().GetAttributes(), "service.name"); got != "recall" {
				t.Errorf("OTLP receiver: got service.name %q, want recall", got)
			}
		}
	}
	return rcv.Spans()
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

// summarisedHarness is a tracedHarness whose conversations are
// summarised (trigger_turns 2, keep_turns 1), once conv holds three turns
// ("turn 1" and so on, each followed by suffix) and its summary job has
// landed.
func summarisedHarness(t *testing.T, conv, suffix string) (h *harness, flush func() []*tracepb.Span) {
	t.Helper()
	h, flush = tracedHarness(t, e2etest.Options{
		Global: func(g *config.Global) {
			g.Defaults.Summary.Enabled, g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = true, 2, 1
		},
		Summary: func(*summary.Config) {},
	})
	for i := 1; i <= 3; i++ {
		h.Say(key, conv, fmt.Sprintf("turn %d%s", i, suffix))
	}
	if d := h.WaitJob(conv); d.Outcome != summary.Landed {
		t.Fatalf("got job %+v, want one that landed", d)
	}
	return h, flush
}

// tracedHarness is a harness whose server exports its spans over
// OTLP/HTTP to a receiver, as the environment of cmd/recall configures
// it; flush sends what is queued (the tracer's shutdown).
func tracedHarness(t *testing.T, o e2etest.Options) (h *harness, flush func() []*tracepb.Span) {
	rcv := tracingtest.NewReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "")
	tr, err := tracing.Start(context.Background(), os.Getenv, "test", func(err error) { t.Errorf("export: %v", err) })
	if err != nil || tr == nil {
		t.Fatalf("tracing.Start: %v, %v", tr, err)
	}
	adjust := o.Proxy
	o.Proxy = func(c *proxy.Config) {
		if adjust != nil {
			adjust(c)
		}
		c.Tracer = tr
	}
	h = newHarness(t, o)
	flush = func() []*tracepb.Span {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		return receivedSpans(t, rcv)
	}
	return h, flush
}

// A chat turn under a client's traceparent is one "chat {model}" span,
// the client's span's child, with the plan, the upstream call and the
// commit as its children; the upstream request's traceparent names it.
func TestTraceOfChatTurn(t *testing.T) {
	h, flush := tracedHarness(t, e2etest.Options{})
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
		"recall.messages.committed": int64(2), "gen_ai.response.finish_reasons": "[stop]", "recall.thread": "main",
	} {
		if got := attrValue(ex.Attributes, k); got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	noContent(t, spans, "hello")
	for _, k := range []string{"gen_ai.response.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "recall.tokens.estimated_input"} {
		if attrValue(ex.Attributes, k) == nil {
			t.Errorf("no attribute %s", k)
		}
	}
	for _, name := range []string{tracing.SpanLoad, tracing.SpanCurate, tracing.SpanUpstream, tracing.SpanCommit} {
		c := byName[name]
		if c == nil {
			t.Errorf("no child span %s", name)
			continue
		}
		if !bytes.Equal(c.ParentSpanId, ex.SpanId) {
			t.Errorf("%s: got parent %x, want the exchange's span %x", name, c.ParentSpanId, ex.SpanId)
		}
		if name == tracing.SpanCurate && attrValue(c.Attributes, "recall.budget") == nil {
			t.Errorf("%s: no recall.budget", name)
		}
		if c.StartTimeUnixNano < ex.StartTimeUnixNano || c.EndTimeUnixNano > ex.EndTimeUnixNano {
			t.Errorf("%s: got %d..%d, want within the exchange's %d..%d", name, c.StartTimeUnixNano, c.EndTimeUnixNano, ex.StartTimeUnixNano, ex.EndTimeUnixNano)
		}
	}
}

// A Responses turn without a client's traceparent starts a trace of its
// own, and is traced as a chat turn is.
func TestTraceOfResponsesTurn(t *testing.T) {
	h, flush := tracedHarness(t, e2etest.Options{})
	r := h.Post("/v1/responses", key, "traced-2", `{"model":"gpt-4o-mini","input":"hello"}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("traced-2")
	upstreamParent := h.Up.Last().Header.Get("Traceparent")
	ex := lastSpan(t, flush(), "chat gpt-4o-mini")
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
	_, flush := summarisedHarness(t, "traced-sum", "")
	job := lastSpan(t, flush(), "update_memory summary")
	for k, want := range map[string]any{"gen_ai.operation.name": "update_memory", "gen_ai.conversation.id": "traced-sum",
		"recall.summary.outcome": "landed", "recall.summary.attempt": int64(1), "recall.summary.calls": int64(1)} {
		if got := attrValue(job.Attributes, k); got != want {
			t.Errorf("%s: got %v, want %v", k, got, want)
		}
	}
	if job.StartTimeUnixNano >= job.EndTimeUnixNano || len(job.ParentSpanId) != 0 {
		t.Errorf("got span %d to %d, parent %x, want the attempt's time, a root", job.StartTimeUnixNano, job.EndTimeUnixNano, job.ParentSpanId)
	}
}

// The conversation API's forget and delete are delete_memory spans of the
// conversation they changed.
func TestTraceOfForgetAndDelete(t *testing.T) {
	h, flush := tracedHarness(t, e2etest.Options{})
	h.Say(key, "traced-del", "one")
	h.Say(key, "traced-del", "two")
	if a := h.API(key, "", "POST", "/recall/v1/conversations/traced-del/forget", `{"instruction":"oldest","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("forget: got %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "DELETE", "/recall/v1/conversations/traced-del", ""); a.Status != 200 {
		t.Fatalf("delete: got %d %s", a.Status, a.Body)
	}
	got := map[string]map[string]any{}
	for _, s := range flush() {
		if !strings.HasPrefix(s.Name, "delete_memory") {
			continue
		}
		a := map[string]any{}
		for _, kv := range s.Attributes {
			a[kv.Key] = attrValue(s.Attributes, kv.Key)
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
	h, flush := tracedHarness(t, e2etest.Options{})
	r := h.Post("/v1/chat/completions", key, "", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("")
	var names []string
	for _, s := range flush() {
		names = append(names, s.Name)
		if s.Name != "chat gpt-4o-mini" {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == "recall.tokens.estimated_input" || kv.Key == "gen_ai.conversation.id" {
				t.Errorf("got %s = %v, want none for a request that records nothing", kv.Key, attrValue(s.Attributes, kv.Key))
			}
		}
		return
	}
	t.Errorf("got spans %q, want one named \"chat gpt-4o-mini\"", names)
}

// lastSpan is the last of spans named name; the test ends if there is
// none.
func lastSpan(t *testing.T, spans []*tracepb.Span, name string) *tracepb.Span {
	t.Helper()
	var last *tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			last = s
		}
	}
	if last == nil {
		t.Fatalf("no span %q", name)
	}
	return last
}

// spanTree indexes decoded spans by name and by parent.
type spanTree struct {
	all      []*tracepb.Span
	children map[string][]*tracepb.Span // by the parent's span id
}

func newSpanTree(spans []*tracepb.Span) spanTree {
	st := spanTree{all: spans, children: map[string][]*tracepb.Span{}}
	for _, s := range spans {
		st.children[string(s.ParentSpanId)] = append(st.children[string(s.ParentSpanId)], s)
	}
	return st
}

// named returns the spans named name, in start order.
func (st spanTree) named(name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range st.all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *tracepb.Span) int { return cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano) })
	return out
}

// child returns parent's one child named name (nil: none).
func (st spanTree) child(parent *tracepb.Span, name string) *tracepb.Span {
	for _, c := range st.children[string(parent.SpanId)] {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// exchange returns the exchange span of conversation conv whose
// attribute key is value (nil: none).
func (st spanTree) exchange(conv, key string, value any) *tracepb.Span {
	for _, s := range st.all {
		if attrValue(s.Attributes, "gen_ai.operation.name") == "chat" && attrValue(s.Attributes, "gen_ai.conversation.id") == conv &&
			attrValue(s.Attributes, key) == value {
			return s
		}
	}
	return nil
}

// wantAttrs checks s's attributes.
func wantAttrs(t *testing.T, s *tracepb.Span, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if got := attrValue(s.Attributes, k); got != w {
			t.Errorf("%s: %s: got %v, want %v", s.Name, k, got, w)
		}
	}
}

// A Responses turn whose model searches the history first is one
// exchange span with a recall.tool_round per upstream call: the first
// round's children are its upstream call and the execute_tool span of
// search_conversations, whose search is a search_memory span under it;
// the second round has its upstream call alone.
func TestTraceOfResponsesToolLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) { testTraceOfResponsesToolLoop(t, stream) })
	}
}

func testTraceOfResponsesToolLoop(t *testing.T, stream bool) {
	h, flush := tracedHarness(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.Tools = []string{"search_conversations"}
	}})
	h.Up.Enqueue(upstreamtest.Reply{Content: "Let me look. ", ToolCalls: []upstreamtest.ToolCall{{Name: "search_conversations", Arguments: `{"query":"friday"}`}}},
		upstreamtest.Reply{Content: "Found it."})
	r := h.Post("/v1/responses", key, "traced-tools", fmt.Sprintf(`{"model":"gpt-4o-mini","input":"when do we fly on friday?","stream":%v}`, stream))
	if r.Status != 200 {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone("traced-tools")
	st := newSpanTree(flush())
	ex := st.exchange("traced-tools", "recall.ingress", "responses")
	if ex == nil {
		t.Fatalf("no exchange span of traced-tools among %d spans", len(st.all))
	}
	wantAttrs(t, ex, map[string]any{"gen_ai.operation.name": "chat", "recall.thread": "main", "recall.exchange.status": "answered",
		"recall.stream": stream})
	var rounds []*tracepb.Span
	for _, c := range st.children[string(ex.SpanId)] {
		if c.Name == tracing.SpanToolRound {
			rounds = append(rounds, c)
		}
	}
	slices.SortFunc(rounds, func(a, b *tracepb.Span) int { return cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano) })
	if len(rounds) != 2 {
		t.Fatalf("got %d %s children of the exchange, want 2", len(rounds), tracing.SpanToolRound)
	}
	wantAttrs(t, rounds[0], map[string]any{"recall.tool_round.index": int64(1), "recall.tool_round.runs": int64(1)})
	wantAttrs(t, rounds[1], map[string]any{"recall.tool_round.index": int64(2), "recall.tool_round.runs": int64(0)})
	for i, rd := range rounds {
		if st.child(rd, tracing.SpanUpstream) == nil {
			t.Errorf("round %d: no %s child", i+1, tracing.SpanUpstream)
		}
	}
	run := st.child(rounds[0], "execute_tool search_conversations")
	if run == nil {
		t.Fatalf("round 1: no execute_tool search_conversations child")
	}
	wantAttrs(t, run, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_conversations",
		"recall.tool.outcome": "ok"})
	if attrValue(run.Attributes, "gen_ai.tool.call.id") == nil {
		t.Errorf("%s: no gen_ai.tool.call.id", run.Name)
	}
	search := st.child(run, "search_memory search_conversations")
	if search == nil {
		t.Fatalf("no search_memory span under %s", run.Name)
	}
	wantAttrs(t, search, map[string]any{"gen_ai.operation.name": "search_memory", "gen_ai.provider.name": "recall",
		"gen_ai.conversation.id": "traced-tools", "gen_ai.memory.namespace": attrValue(ex.Attributes, "recall.tenant")})
	if attrValue(search.Attributes, "gen_ai.memory.search.result.count") == nil {
		t.Errorf("%s: no gen_ai.memory.search.result.count", search.Name)
	}
	if st.child(rounds[1], "execute_tool search_conversations") != nil {
		t.Errorf("round 2 ran a tool, want none")
	}
	for _, name := range []string{tracing.SpanLoad, tracing.SpanCurate, tracing.SpanCommit} {
		if st.child(ex, name) == nil {
			t.Errorf("no %s child of the exchange", name)
		}
	}
}

// Once a summary stands in for a conversation's first turns, the next
// exchange says so (gen_ai.conversation.compacted, the summary's
// figures) and its curate span gives the budget and the turns kept,
// dropped and cut; the summary job, a search and a forget through the
// API are memory spans, all as an OTLP receiver decodes them.
func TestTraceOfSummaryCompactionSearchAndForget(t *testing.T) {
	h, flush := summarisedHarness(t, "traced-compact", " about the harbour")
	h.Say(key, "traced-compact", "turn 4")
	if a := h.API(key, "", "GET", "/recall/v1/conversations/traced-compact/search?q=harbour", ""); a.Status != 200 {
		t.Fatalf("search: got %d %s", a.Status, a.Body)
	}
	if a := h.API(key, "", "POST", "/recall/v1/conversations/traced-compact/forget", `{"instruction":"oldest","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("forget: got %d %s", a.Status, a.Body)
	}
	st := newSpanTree(flush())

	ex := st.exchange("traced-compact", "gen_ai.conversation.compacted", true)
	if ex == nil {
		t.Fatalf("no exchange of traced-compact with gen_ai.conversation.compacted true among %d spans", len(st.all))
	}
	for _, k := range []string{"recall.summary.through", "recall.summary.tokens"} {
		if attrValue(ex.Attributes, k) == nil {
			t.Errorf("compacted exchange: no %s", k)
		}
	}
	curate := st.child(ex, tracing.SpanCurate)
	if curate == nil {
		t.Fatalf("no %s child of the compacted exchange", tracing.SpanCurate)
	}
	wantAttrs(t, curate, map[string]any{"gen_ai.conversation.compacted": true, "recall.tool_results.cut": int64(0)})
	for _, k := range []string{"recall.budget", "recall.turns.kept", "recall.turns.dropped"} {
		if v, ok := attrValue(curate.Attributes, k).(int64); !ok || v < 0 {
			t.Errorf("%s: %s: got %v, want a count", curate.Name, k, attrValue(curate.Attributes, k))
		}
	}
	if b := attrValue(curate.Attributes, "recall.budget"); b == int64(0) {
		t.Errorf("curate's budget %v, want the plan's", b)
	}
	if d := attrValue(curate.Attributes, "recall.turns.dropped").(int64); d < 1 {
		t.Errorf("curate: got %d turns dropped, want the summarised ones counted", d)
	}
	load := st.child(ex, tracing.SpanLoad)
	if load == nil || load.EndTimeUnixNano > curate.StartTimeUnixNano {
		t.Errorf("got load %v, want a load span that ends before curation starts", load)
	}

	jobs := st.named("update_memory summary")
	if len(jobs) == 0 {
		t.Fatalf("no update_memory summary span")
	}
	wantAttrs(t, jobs[0], map[string]any{"gen_ai.operation.name": "update_memory", "gen_ai.conversation.id": "traced-compact",
		"recall.summary.outcome": "landed", "gen_ai.provider.name": "recall", "gen_ai.memory.scope": "session"})
	searches := st.named("search_memory search")
	if len(searches) != 1 {
		t.Fatalf("got %d search_memory search spans, want 1", len(searches))
	}
	wantAttrs(t, searches[0], map[string]any{"gen_ai.operation.name": "search_memory", "gen_ai.conversation.id": "traced-compact",
		"http.response.status_code": int64(200)})
	if n, _ := attrValue(searches[0].Attributes, "gen_ai.memory.search.result.count").(int64); n < 1 {
		t.Errorf("search: got %v results, want the harbour's turns", attrValue(searches[0].Attributes, "gen_ai.memory.search.result.count"))
	}
	forgets := st.named("delete_memory forget")
	if len(forgets) != 1 {
		t.Fatalf("got %d delete_memory forget spans, want 1", len(forgets))
	}
	wantAttrs(t, forgets[0], map[string]any{"gen_ai.operation.name": "delete_memory", "gen_ai.conversation.id": "traced-compact",
		"gen_ai.memory.scope": "session", "http.response.status_code": int64(200)})
}

// An agent's side call and a subagent's call say which thread they are:
// side with the rule that made it one, or the subagent's thread by its
// name, in the conversation it belongs to.
func TestTraceOfThreads(t *testing.T) {
	h, flush := tracedHarness(t, e2etest.Options{})
	h.Say(key, "traced-th", "main turn")
	for thread, conv := range map[string]string{"side": "traced-th", "helper-1": history.ThreadID("traced-th", "helper-1")} {
		r := h.PostHeaders("/v1/chat/completions", map[string]string{"Authorization": "Bearer " + key,
			"X-Conversation-ID": "traced-th", "Content-Type": "application/json", "X-Recall-Thread": thread},
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"a `+thread+` call"}]}`)
		if r.Status != 200 {
			t.Fatalf("%s: got %d %s, want 200", thread, r.Status, r.Body)
		}
		h.WaitDone(conv)
	}
	st := newSpanTree(flush())
	if ex := st.exchange("traced-th", "recall.thread", "main"); ex == nil {
		t.Errorf("no exchange of traced-th on the main thread")
	}
	side := st.exchange("traced-th", "recall.thread", "side")
	if side == nil {
		t.Fatalf("no exchange of traced-th on the side thread among %d spans", len(st.all))
	}
	wantAttrs(t, side, map[string]any{"recall.exchange.kind": "side"})
	if attrValue(side.Attributes, "recall.thread.reason") == nil {
		t.Errorf("side call: no recall.thread.reason")
	}
	sub := st.exchange("traced-th", "recall.thread", "subagent")
	if sub == nil {
		t.Fatalf("no exchange of traced-th on a subagent's thread among %d spans", len(st.all))
	}
	wantAttrs(t, sub, map[string]any{"recall.thread.name": "helper-1"})
}

// noContent fails if any span carries text (a message's words) in any
// attribute.
func noContent(t *testing.T, spans []*tracepb.Span, text string) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if v := fmt.Sprint(attrValue(s.Attributes, kv.Key)); strings.Contains(v, text) {
				t.Errorf("%s: %s = %q carries the message's text %q", s.Name, kv.Key, v, text)
			}
		}
	}
}

// With the operator's opt-in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
// a committed exchange's span carries what went upstream and the answer
// as the conventions' gen_ai.input.messages and gen_ai.output.messages,
// and nothing else carries them.
func TestTraceOfMessageContent(t *testing.T) {
	t.Setenv(tracing.ContentVariable, "true")
	h, flush := tracedHarness(t, e2etest.Options{})
	h.Say(key, "traced-content", "the first secret")
	h.Say(key, "traced-content", "the second secret")
	st := newSpanTree(flush())
	ex := st.exchange("traced-content", "recall.messages.new", int64(1))
	var last *tracepb.Span
	for _, s := range st.all {
		if attrValue(s.Attributes, "gen_ai.conversation.id") == "traced-content" && attrValue(s.Attributes, "gen_ai.operation.name") == "chat" &&
			(last == nil || s.StartTimeUnixNano > last.StartTimeUnixNano) {
			last = s
		}
	}
	if ex == nil || last == nil {
		t.Fatalf("no exchange span of traced-content among %d spans", len(st.all))
	}
	var in []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"parts"`
	}
	raw, _ := attrValue(last.Attributes, "gen_ai.input.messages").(string)
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatalf("gen_ai.input.messages %q: %v", raw, err)
	}
	var texts []string
	for _, m := range in {
		for _, p := range m.Parts {
			texts = append(texts, m.Role+":"+p.Type+":"+p.Content)
		}
	}
	if len(texts) < 3 || texts[0] != "user:text:the first secret" || texts[len(texts)-1] != "user:text:the second secret" {
		t.Errorf("got input messages %q, want the stored turn then the new one", texts)
	}
	var out []struct {
		Role         string `json:"role"`
		FinishReason string `json:"finish_reason"`
		Parts        []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"parts"`
	}
	raw, _ = attrValue(last.Attributes, "gen_ai.output.messages").(string)
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("gen_ai.output.messages %q: %v", raw, err)
	}
	if len(out) != 1 || out[0].Role != "assistant" || out[0].FinishReason != "stop" || len(out[0].Parts) != 1 || out[0].Parts[0].Type != "text" || out[0].Parts[0].Content == "" {
		t.Errorf("got output messages %s, want the assistant's answer with its finish reason", raw)
	}
	var others []*tracepb.Span
	for _, s := range st.all {
		if s.Name != last.Name && s != ex {
			others = append(others, s)
		}
	}
	noContent(t, others, "secret")
}
