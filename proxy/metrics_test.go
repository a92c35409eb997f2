package proxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/tracing"
)

func TestMetricsExposeRequestsAndCuration(t *testing.T) {
	h := newHarness(t, e2etest.Options{Global: func(g *config.Global) { g.Defaults.History.BudgetTokens = 300 }})
	for i := range 12 {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"question ` + strings.Repeat("lorem ", 20) + string(rune('a'+i)) + `"}]}`
		if r := h.Post("/v1/chat/completions", key, "m-1", body); r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
		if i%4 == 1 { // the tenant's series change between statuses and routes
			if r := h.Post("/v1/chat/completions", key, "m-1", `{"model":"gpt-4o"}`); r.Status != 400 {
				t.Fatalf("no messages: %d %s", r.Status, r.Body)
			}
			if r := h.Post("/v1/chat/completions", key, "", body); r.Status != 200 {
				t.Fatalf("plain: %d %s", r.Status, r.Body)
			}
		}
	}
	h.Post("/v1/chat/completions", "", "m-1", `{}`) // a 401

	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	text := string(b)
	for _, want := range []string{
		`recall_requests_total{route="chat",status="200",tenant="default"} 15`,
		`recall_requests_total{route="chat",status="400",tenant="default"} 3`,
		`recall_requests_total{route="chat",status="401",tenant=""} 1`,
		`recall_request_duration_seconds_count{tenant="default"} 15`,
		`recall_upstream_duration_seconds_count{tenant="default"} 15`,
		`recall_overhead_seconds_count{tenant="default"} 15`,
		`recall_context_tokens_count{tenant="default"} 12`,
		`recall_store_duration_seconds_count{op="commit"} 12`,
		`recall_active_conversations 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// A budget of 300 tokens cannot hold 12 turns: some were dropped and the
	// tokens they would have cost counted as saved.
	for _, series := range []string{`recall_turns_dropped_total{tenant="default"}`, `recall_tokens_saved_total{tenant="default"}`} {
		if !strings.Contains(text, series+" ") || strings.Contains(text, series+" 0\n") {
			t.Errorf("%s missing or zero", series)
		}
	}
	// No conversation id or credential ever becomes a label.
	if strings.Contains(text, "m-1") || strings.Contains(text, key) {
		t.Errorf("metrics leak a conversation id or key")
	}
}

// Recall's added time counts the commit, streamed or not: for a stream the
// upstream's part ends when its stream does, before the commit that holds
// back finish_reason. The clock moves only while the store commits.
func TestOverheadCountsTheCommit(t *testing.T) {
	var now atomic.Int64
	clock := func() time.Time { return time.Unix(1_800_000_000, now.Load()) }
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) {
		c.Now = clock
		withCommitHook(func(context.Context) error {
			now.Add(int64(3 * time.Second))
			return nil
		})(c)
	}})
	for i, body := range []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"plain"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"streamed"}],"stream":true}`,
	} {
		if r := h.Post("/v1/chat/completions", key, "o-"+strconv.Itoa(i), body); r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
		h.WaitDone("o-" + strconv.Itoa(i))
		overhead, upstream := h.Metric(`recall_overhead_seconds_sum{tenant="default"}`), h.Metric(`recall_upstream_duration_seconds_sum{tenant="default"}`)
		if want := 3 * float64(i+1); overhead != want || upstream != 0 {
			t.Errorf("after request %d: overhead %v s, upstream %v s; want %v and 0 (the commits' time is Recall's)", i, overhead, upstream, want)
		}
	}
}

// Spans lost to a collector that refuses them show in the metrics: an
// operator sees a trace pipeline down without reading the log.
func TestMetricsCountTraceSpansLost(t *testing.T) {
	tr := tracing.New(func(context.Context, []byte) error { return errors.New("collector down") })
	h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.Tracer = tr }})
	// Not streamed: the exchange's span is queued before its answer is
	// written (a stream's ends after the client read its end).
	for i := range 2 {
		if r := h.Post("/v1/chat/completions", key, "spans", e2etest.ChatBody("hello", false)); r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
	}
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"recall_trace_spans_failed_total 2", "recall_trace_spans_dropped_total 0"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
