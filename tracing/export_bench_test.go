package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
)

// BenchmarkExport feeds exchanges through a Tracer exporting over
// OTLP/HTTP to an in-process receiver that reads and discards each
// request: per exchange, the whole cost of its five spans (made,
// encoded, sent) on every goroutine of the process, the receiver's
// reading included; dropped/op counts the exchanges whose spans the
// queue dropped. cpu-ns/op is the process's CPU time; the Tracer's
// shutdown, which sends what is left, is inside the measure.
func BenchmarkExport(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	tr, err := tracing.Start(context.Background(), os.Getenv, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	feed(b, tr)
}

// BenchmarkExportEncode is BenchmarkExport with each request dropped
// where it would be sent: the spans' writing alone.
func BenchmarkExportEncode(b *testing.B) {
	feed(b, tracing.New(func(context.Context, []byte) error { return nil }))
}

// feed ends b.N exchanges of a chat turn (five spans each) with tr, then
// shuts tr down.
func feed(b *testing.B, tr *tracing.Tracer) {
	t0 := time.Unix(1_800_000_000, 0)
	r := &history.ExchangeRecord{ID: "xch_18ed51aeb9d2087e", Kind: "chat", Ingress: "chat.completions", Upstream: "chat.completions",
		Model: "gpt-4o-mini", Status: "answered", HTTPStatus: 200, Budget: 64000, Calibration: 1,
		Tokens:   history.ExchangeTokens{EstimatedInput: 120, CalibratedInput: 120, ReportedInput: 118, Output: 9, Cached: 64},
		Included: []history.Span{{From: 8, To: 11}}, NewMessages: 1,
		Committed: []history.Span{{From: 12, To: 13}},
	}
	calls := []tracing.Call{{Sent: t0.Add(4 * time.Millisecond), FirstByte: t0.Add(20 * time.Millisecond), Done: t0.Add(49 * time.Millisecond)}}
	tp := []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		if n++; n%256 == 0 { // as a busy proxy's exchanges arrive: queued in runs, not all at once
			if err := tr.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		x := tr.Begin(tp, nil, t0)
		x.PlanStart, x.Loaded, x.PlanEnd = t0.Add(time.Millisecond), t0.Add(2*time.Millisecond), t0.Add(3*time.Millisecond)
		x.CommitStart, x.CommitEnd = t0.Add(50*time.Millisecond), t0.Add(52*time.Millisecond)
		x.ResponseModel, x.FinishReason = "gpt-4o-mini-2024-07-18", "stop"
		x.End(tracing.Ended{Record: r, Conversation: "bench-1", Tenant: "default", Calls: calls, End: t0.Add(60 * time.Millisecond)})
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if d := tr.Dropped(); d > 0 {
		b.ReportMetric(float64(d)/float64(b.N), "dropped/op")
	}
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
