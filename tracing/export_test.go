package tracing_test

import (
	"context"
	"encoding/hex"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/tracing/tracingtest"
)

func startTracer(t *testing.T, env map[string]string) *tracing.Tracer {
	t.Helper()
	tr, err := tracing.Start(t.Context(), func(k string) string { return env[k] }, "v9", nil)
	if err != nil || tr == nil {
		t.Fatalf("Start: got %v, %v", tr, err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr
}

// endOne ends one exchange with tr, a span of its own.
func endOne(tr *tracing.Tracer, traceparent string) *tracing.Exchange {
	t0 := time.Now()
	x := tr.Begin([]byte(traceparent), nil, t0)
	x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Status: "answered", HTTPStatus: 200}, End: t0.Add(time.Millisecond)})
	return x
}

// The HTTP exporter posts to the endpoint's /v1/traces (a traces
// endpoint as it is), with the environment's headers, gzip when asked,
// and the resource the environment names.
func TestStartExportsOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		env        map[string]string
	}{
		{"endpoint", "/base/v1/traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "/base/"}},
		{"traces endpoint", "/custom", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "/ignored"}},
		{"gzip", "/v1/traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tracingtest.NewReceiver(t)
			env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20tok,x-scope=a",
				"OTEL_SERVICE_NAME": "gateway", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,service.name=ignored"}
			for k, v := range tc.env {
				if strings.HasSuffix(k, "ENDPOINT") {
					v = rcv.URL + v
				}
				env[k] = v
			}
			tr := startTracer(t, env)
			endOne(tr, "")
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			reqs := rcv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			h := reqs[0].Header
			if reqs[0].Path != tc.path || h.Get("Authorization") != "Bearer tok" || h.Get("X-Scope") != "a" ||
				h.Get("Content-Type") != "application/x-protobuf" {
				t.Errorf("got %s with headers %v, want %s with the environment's headers", reqs[0].Path, h, tc.path)
			}
			if gz := h.Get("Content-Encoding") == "gzip"; gz != (tc.name == "gzip") {
				t.Errorf("got Content-Encoding %q", h.Get("Content-Encoding"))
			}
			rs := reqs[0].Export.ResourceSpans[0]
			res := values(rs.Resource.Attributes)
			if res["service.name"] != "gateway" || res["service.version"] != "v9" || res["deployment.environment"] != "prod" {
				t.Errorf("got resource %v, want the environment's", res)
			}
			if sc := rs.ScopeSpans[0]; sc.Scope.GetName() != "github.com/recallproxy/recall/tracing" || len(sc.Spans) != 1 || sc.Spans[0].Name != "chat" {
				t.Errorf("got scope %v with %d spans, want Recall's with the exchange's", sc.Scope, len(sc.Spans))
			}
		})
	}
}

// traceService is an OTLP/gRPC receiver.
type traceService struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
	md    metadata.MD
}

func (s *traceService) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.md, _ = metadata.FromIncomingContext(ctx)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// The gRPC exporter calls TraceService/Export on the endpoint, its
// headers as metadata, the spans as the HTTP exporter writes them.
func TestStartExportsOverGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svc := &traceService{}
	collectortrace.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	for _, compression := range []string{"none", "gzip"} {
		t.Run(compression, func(t *testing.T) {
			tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
				"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_HEADERS": "x-scope=a",
				"OTEL_EXPORTER_OTLP_COMPRESSION": compression})
			x := endOne(tr, clientTraceparent)
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			if f := tr.Failed(); f != 0 {
				t.Fatalf("got %d failed, want the export to land", f)
			}
			svc.mu.Lock()
			defer svc.mu.Unlock()
			if len(svc.spans) != 1 || !slices.Equal(svc.md.Get("x-scope"), []string{"a"}) {
				t.Fatalf("got %d spans, metadata %v, want the exchange's with x-scope", len(svc.spans), svc.md)
			}
			if s := svc.spans[0]; string(x.Traceparent()[3:35]) != hex.EncodeToString(s.TraceId) || hex.EncodeToString(s.ParentSpanId) != "b7ad6b7169203331" {
				t.Errorf("got trace %x parent %x, want the client's", s.TraceId, s.ParentSpanId)
			}
			svc.spans = nil
		})
	}
}

// OTEL_TRACES_SAMPLER decides which traces are recorded: an unsampled
// trace's exchange still names itself upstream (flags 00) but sends no
// span.
func TestSampler(t *testing.T) {
	const low = "00-0af7651916cd43dd0000000000000001-b7ad6b7169203331-01"  // under any ratio above 0
	const high = "00-0af7651916cd43ddfffffffffffffff0-b7ad6b7169203331-01" // over any ratio below 1
	const unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	for _, tc := range []struct {
		name, sampler, arg, traceparent string
		want                            bool
	}{
		{"default, no parent", "", "", "", true},
		{"default, sampled parent", "", "", clientTraceparent, true},
		{"default, unsampled parent", "", "", unsampled, false},
		{"always_off", "always_off", "", clientTraceparent, false},
		{"always_on, unsampled parent", "always_on", "", unsampled, true},
		{"traceidratio under", "traceidratio", "0.5", low, true},
		{"traceidratio over", "traceidratio", "0.5", high, false},
		{"parentbased_traceidratio follows the parent", "parentbased_traceidratio", "0.5", high, true},
		{"parentbased_always_off, no parent", "parentbased_always_off", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tracingtest.NewReceiver(t)
			tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_TRACES_SAMPLER": tc.sampler,
				"OTEL_TRACES_SAMPLER_ARG": tc.arg})
			x := endOne(tr, tc.traceparent)
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := len(rcv.Spans()) == 1; got != tc.want {
				t.Errorf("got %d spans, want sampled %v", len(rcv.Spans()), tc.want)
			}
			wantFlags := map[bool]string{true: "-01", false: "-00"}[tc.want]
			if got := string(x.Traceparent()); !strings.HasSuffix(got, wantFlags) {
				t.Errorf("got traceparent %q, want flags %s", got, wantFlags)
			}
		})
	}
}

// Each request carries at most OTEL_BSP_MAX_EXPORT_BATCH_SIZE
// exchanges' spans.
func TestExportBatches(t *testing.T) {
	rcv := tracingtest.NewReceiver(t)
	tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4"})
	for range 10 {
		endOne(tr, "")
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := rcv.Requests()
	total := 0
	for _, req := range reqs {
		n := len(req.Export.ResourceSpans[0].ScopeSpans[0].Spans)
		if n > 4 {
			t.Errorf("got a request of %d spans, want at most 4", n)
		}
		total += n
	}
	if total != 10 || len(reqs) < 3 {
		t.Errorf("got %d spans in %d requests, want 10 in 3 or more", total, len(reqs))
	}
}

// A batch whose spans pass a mebibyte (exchanges with their messages'
// content) is sent in more than one request.
func TestExportSplitsLargeBatches(t *testing.T) {
	rcv := tracingtest.NewReceiver(t)
	tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL})
	for range 3 {
		t0 := time.Now()
		x := tr.Begin(nil, nil, t0)
		x.Input = strings.Repeat("x", 600<<10)
		x.End(tracing.Ended{Record: &history.ExchangeRecord{Kind: "chat", Status: "answered", HTTPStatus: 200}, End: t0})
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if n := len(rcv.Requests()); n < 2 {
		t.Errorf("got %d requests, want the 1.8 MiB of spans in 2 or more", n)
	}
	if got := len(spans); got != 3 {
		t.Errorf("got %d spans, want 3", got)
	}
}

// Without a Flush, what is queued is sent every OTEL_BSP_SCHEDULE_DELAY.
func TestExportEveryScheduleDelay(t *testing.T) {
	rcv := tracingtest.NewReceiver(t)
	tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL, "OTEL_BSP_SCHEDULE_DELAY": "10"})
	endOne(tr, "")
	rcv.Wait(t, 1)
	if got := len(rcv.Spans()); got != 1 {
		t.Errorf("got %d spans, want 1", got)
	}
}

// Past OTEL_BSP_MAX_QUEUE_SIZE exchanges waiting (the exporter is
// behind), an exchange's spans are dropped and counted; the rest are
// sent.
func TestQueueFullDrops(t *testing.T) {
	rcv := tracingtest.NewReceiver(t)
	release := make(chan struct{})
	rcv.Hold(release)
	tr := startTracer(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
		"OTEL_BSP_MAX_QUEUE_SIZE": "2", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1"})
	endOne(tr, "")
	rcv.Wait(t, 1) // the goroutine is in its export, the queue empty
	for range 3 {
		endOne(tr, "")
	}
	if d := tr.Dropped(); d != 1 {
		t.Errorf("got %d dropped, want 1", d)
	}
	close(release)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(rcv.Spans()); got != 3 {
		t.Errorf("got %d spans, want 3", got)
	}
}

// A collector that refuses every export (503) is reported to the
// error callback and the exchanges count as failed: one refused export
// is told of with its status; a run of refused exports is told of at
// the 1st, 2nd, 4th… failure in a row, not at each.
func TestRefusedExportsReported(t *testing.T) {
	defer tracing.SetRetryDelay(0)()
	for _, tc := range []struct {
		name      string
		env       map[string]string // beside the endpoint
		exchanges int
		told      int    // errors reported
		lastHas   string // in the last error reported
		failed    uint64
	}{
		{"one refused export is told with its status", nil, 2, 1, "503", 2},
		{"refusals in a row are told at the 1st, 2nd and 4th",
			map[string]string{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1"}, 5, 3, "4 requests failed in a row", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tracingtest.NewReceiver(t)
			rcv.SetStatus(http.StatusServiceUnavailable)
			var mu sync.Mutex
			var errs []string
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}
			maps.Copy(env, tc.env)
			tr, err := tracing.Start(t.Context(), func(k string) string { return env[k] }, "", func(err error) {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			})
			if err != nil {
				t.Fatal(err)
			}
			for range tc.exchanges {
				endOne(tr, "")
			}
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) != tc.told || !strings.Contains(errs[tc.told-1], tc.lastHas) || tr.Failed() != tc.failed {
				t.Errorf("got errors %q, %d failed; want %d told, the last with %q, and %d failed", errs, tr.Failed(), tc.told, tc.lastHas, tc.failed)
			}
		})
	}
}

// A collector that answers it may take the request later (OTLP's
// retryable answers) is sent it again: once shedding load (503), the
// spans arrive on the second attempt and nothing counts as failed; a
// request it refuses for good (400) is not sent again.
func TestExportRetriedWhenTheCollectorSaysLater(t *testing.T) {
	defer tracing.SetRetryDelay(0)()
	for _, tc := range []struct {
		name     string
		answers  []int
		requests int
		failed   uint64
	}{
		{"unavailable once", []int{http.StatusServiceUnavailable}, 2, 0},
		{"too many requests twice", []int{http.StatusTooManyRequests, http.StatusTooManyRequests}, 3, 0},
		{"unavailable throughout", []int{503, 503, 503, 503}, 3, 1},
		{"bad request", []int{http.StatusBadRequest}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tracingtest.NewReceiver(t)
			rcv.SetAnswers(tc.answers)
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL}
			tr, err := tracing.Start(t.Context(), func(k string) string { return env[k] }, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			endOne(tr, "")
			if err := tr.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			requests := len(rcv.Requests())
			if requests != tc.requests || tr.Failed() != tc.failed {
				t.Errorf("%d requests, %d exchanges failed; want %d and %d", requests, tr.Failed(), tc.requests, tc.failed)
			}
			if err := tr.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A setting Start cannot honour is an error at start, naming it.
func TestStartRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct{ name, key, value, want string }{
		{"sampler", "OTEL_TRACES_SAMPLER", "sometimes", "OTEL_TRACES_SAMPLER"},
		{"ratio", "OTEL_TRACES_SAMPLER_ARG", "2", "OTEL_TRACES_SAMPLER_ARG"},
		{"timeout", "OTEL_EXPORTER_OTLP_TIMEOUT", "10s", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"compression", "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd", "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{"headers", "OTEL_EXPORTER_OTLP_HEADERS", "novalue", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"batch", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "0", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"},
		{"endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "endpoint"},
		{"certificate", "OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem", "OTEL_EXPORTER_OTLP_CERTIFICATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
				"OTEL_TRACES_SAMPLER": "traceidratio", tc.key: tc.value}
			tr, err := tracing.Start(t.Context(), func(k string) string { return env[k] }, "", nil)
			if err == nil || tr != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, %v, want an error naming %s", tr, err, tc.want)
			}
		})
	}
}
