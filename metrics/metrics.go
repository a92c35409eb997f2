// Package metrics is Recall's Prometheus metrics, served on /metrics:
// requests by tenant, route and status, their latency (end to end,
// upstream, Recall's own), curation, store operations, commits that
// failed, streams aborted, the tokens upstreams reported, the history
// tools' calls and rounds, requests forwarded to another replica, and
// the spans a tracer lost. Labels are
// bounded: tenant ids come from configuration, routes from the code,
// never conversation ids or credentials.
//
// proxy counts its exchanges here; internal/app registers the other
// components' collectors on the same registry (Registry).
package metrics

import (
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/recallproxy/recall/history"
)

// Metrics are Recall's Prometheus metrics. The methods are safe for
// concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	handler  fasthttp.RequestHandler
	requests *prometheus.CounterVec
	total    *durationVec
	upstream *durationVec
	overhead *durationVec
	context  *prometheus.HistogramVec
	saved    *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	cut      *prometheus.CounterVec
	repaired *prometheus.CounterVec
	store    *prometheus.HistogramVec
	commits  *prometheus.CounterVec
	aborted  *prometheus.CounterVec
	tokens   *prometheus.CounterVec
	toolRuns *prometheus.CounterVec
	rounds   *prometheus.HistogramVec
	// forwarded and fellBack are recall_forwarded_requests_total's two
	// series, made at New: both show from the start.
	forwarded, fellBack prometheus.Counter
	// storeLoad and storeCommit are recall_store_duration_seconds's
	// series of the two operations every exchange times.
	storeLoad, storeCommit prometheus.Observer

	// The series every request touches, looked up once each: a vector's
	// WithLabelValues hashes its labels and takes its lock on every call
	// (a tenant's nine a request were 1.9 µs of a durable chat request's
	// core, docs/performance.md).
	mu      sync.RWMutex
	counts  map[requestSeries]prometheus.Counter
	tenants map[string]*tenantSeries
}

// requestSeries names one series of recall_requests_total.
type requestSeries struct {
	tenant, route string
	status        int
}

// tenantSeries are a tenant's series of the metrics each of its
// exchanges touches: the request latency histograms, what curation made
// of its context, and the tokens its upstream reported.
type tenantSeries struct {
	total, upstream, overhead     *durationSeries
	context                       prometheus.Observer
	saved, dropped, cut, repaired prometheus.Counter
	usage                         atomic.Pointer[usageSeries] // the upstream last counted
}

// usageSeries are a tenant's series of recall_upstream_tokens_total for
// one upstream protocol.
type usageSeries struct {
	upstream              string
	input, cached, output prometheus.Counter
}

// runtimeCPU adds, to the Go collector's default series, the CPU the
// runtime's collector and scavenger took (go_cpu_classes_gc_*,
// go_cpu_classes_scavenge_*): their assists run on the goroutine that
// allocates, a request's or Badger's writer's, and are one of a tail's
// causes on a proxy with one core (docs/performance.md, "The memory
// limit's headroom").
var runtimeCPU = collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc|scavenge)/`)}

// New registers Recall's metrics, plus the Go and process
// collectors, on reg (a new registry if nil).
func New(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(runtimeCPU)),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	latency := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_requests_total",
			Help: "Requests answered, by tenant, route and status."}, []string{"tenant", "route", "status"}),
		total: newDurationVec("recall_request_duration_seconds",
			"End-to-end request time, to the last byte relayed.", "tenant", latency),
		upstream: newDurationVec("recall_upstream_duration_seconds",
			"Time from sending upstream to the answer's last byte.", "tenant", latency),
		overhead: newDurationVec("recall_overhead_seconds",
			"Time Recall adds: end-to-end minus upstream.", "tenant", latency),
		context: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_context_tokens",
			Help: "Estimated prompt tokens sent upstream per request.", Buckets: prometheus.ExponentialBuckets(64, 2, 14)}, []string{"tenant"}),
		saved: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_tokens_saved_total",
			Help: "Tokens curation kept out of contexts (dropped turns, cut tool results)."}, []string{"tenant"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_turns_dropped_total",
			Help: "Turns read but left out of a context."}, []string{"tenant"}),
		cut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_tool_results_truncated_total",
			Help: "Earlier tool results cut for a context."}, []string{"tenant"}),
		repaired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_calls_repaired_total",
			Help: "Unanswered tool calls and orphan results removed from sent contexts."}, []string{"tenant"}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_store_duration_seconds",
			Help: "Store operation latency.", Buckets: latency}, []string{"op"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_commit_failures_total",
			Help: "Answers that could not be recorded, by reason (error, timeout)."}, []string{"tenant", "reason"}),
		aborted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_streams_aborted_total",
			Help: "Streams that ended without a whole answer (upstream cut, client gone): nothing committed."}, []string{"tenant"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_upstream_tokens_total",
			Help: "Tokens the upstream reported for recorded answers, by tenant, upstream protocol and kind (input; cached: the part of input read from the provider's prompt cache; output)."},
			[]string{"tenant", "upstream", "kind"}),
		toolRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_history_tool_calls_total",
			Help: "Calls of Recall's history tools the model made, by tool and outcome (ok, invalid, unknown, error)."},
			[]string{"tenant", "tool", "outcome"}),
		rounds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "recall_history_tool_rounds",
			Help: "Upstream calls per client request with history tools offered.", Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10}},
			[]string{"tenant"}),
	}
	hops := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "recall_forwarded_requests_total",
		Help: "Requests on a conversation another replica owns, by outcome: forwarded to it (it answers and counts them in recall_requests_total), or fallback (it could not be reached: served here)."},
		[]string{"outcome"})
	m.forwarded, m.fellBack = hops.WithLabelValues(HopForwarded), hops.WithLabelValues(HopFallback)
	m.storeLoad, m.storeCommit = m.store.WithLabelValues("load"), m.store.WithLabelValues("commit")
	reg.MustRegister(m.requests, m.total, m.upstream, m.overhead, m.context, m.saved, m.dropped, m.cut,
		m.repaired, m.store, m.commits, m.aborted, m.tokens, m.toolRuns, m.rounds, hops)
	m.handler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return m
}

// Registry returns the registry the metrics are registered on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Serve answers a scrape of the registry in Prometheus's text format.
func (m *Metrics) Serve(rc *fasthttp.RequestCtx) { m.handler(rc) }

// ActiveConversations exports f, the number of conversations with a
// request in flight, as a gauge. Call it once.
func (m *Metrics) ActiveConversations(f func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "recall_active_conversations",
		Help: "Conversations with a request in flight."}, func() float64 { return float64(f()) }))
}

// SpanLosses is what a tracer tells of the spans it lost;
// tracing.Tracer implements it.
type SpanLosses interface {
	// Dropped is the number of spans dropped from a full queue.
	Dropped() uint64
	// Failed is the number of spans lost in an export that failed.
	Failed() uint64
}

// TraceSpans counts the spans t lost, dropped from its full queue or in
// an export that failed: a collector slow or down shows here, not only
// in the log. Call it once.
func (m *Metrics) TraceSpans(t SpanLosses) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "recall_trace_spans_dropped_total",
			Help: "Exchanges and memory operations whose spans were dropped because the trace queue was full."},
			func() float64 { return float64(t.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "recall_trace_spans_failed_total",
			Help: "Exchanges and memory operations whose spans were lost to an export that failed after its retries."},
			func() float64 { return float64(t.Failed()) }))
}

// CountRequest counts one answered request of route for tenant ("" before
// authentication). A surface mounted on the server (Config.API) counts
// its own requests here, so /metrics shows every route.
func (m *Metrics) CountRequest(tenant, route string, status int) {
	m.requestCounter(tenant, route, status).Inc()
}

func (m *Metrics) requestCounter(tenant, route string, status int) prometheus.Counter {
	k := requestSeries{tenant, route, status}
	m.mu.RLock()
	c := m.counts[k]
	m.mu.RUnlock()
	if c == nil {
		// Bounded: tenants come from configuration, routes from the code,
		// statuses from HTTP's three digits.
		c = m.requests.WithLabelValues(tenant, route, strconv.Itoa(status))
		m.mu.Lock()
		if m.counts == nil {
			m.counts = make(map[requestSeries]prometheus.Counter)
		}
		m.counts[k] = c
		m.mu.Unlock()
	}
	return c
}

// Latency observes a request of tenant that took total end to end, of
// which upstream waiting for the upstream.
func (m *Metrics) Latency(tenant string, total, upstream time.Duration) {
	m.tenantSeries(tenant).observe(total, upstream)
}

// tenantSeries returns tenant's series, made on its first use.
func (m *Metrics) tenantSeries(tenant string) *tenantSeries {
	m.mu.RLock()
	t := m.tenants[tenant]
	m.mu.RUnlock()
	if t != nil {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t = m.tenants[tenant]; t == nil {
		t = &tenantSeries{
			total: m.total.with(tenant), upstream: m.upstream.with(tenant), overhead: m.overhead.with(tenant),
			context: m.context.WithLabelValues(tenant),
			saved:   m.saved.WithLabelValues(tenant), dropped: m.dropped.WithLabelValues(tenant),
			cut: m.cut.WithLabelValues(tenant), repaired: m.repaired.WithLabelValues(tenant),
		}
		if m.tenants == nil {
			m.tenants = make(map[string]*tenantSeries)
		}
		m.tenants[tenant] = t
	}
	return t
}

func (l *tenantSeries) observe(total, upstream time.Duration) {
	l.total.observe(total)
	l.upstream.observe(upstream)
	l.overhead.observe(total - upstream)
}

// TenantSeries keeps, on a tenant, its series of the metrics each of its
// exchanges touches: found there without the Metrics' lock and maps. The
// zero value is ready to use; it must be used with one tenant only.
type TenantSeries struct {
	latency atomic.Pointer[tenantSeries]
	count   atomic.Pointer[countSeries] // the (route, status) last counted
}

// countSeries is one series of recall_requests_total.
type countSeries struct {
	route  string
	status int
	c      prometheus.Counter
}

// CountTenantRequest is CountRequest for a tenant's exchange, its series
// kept in ts.
func (m *Metrics) CountTenantRequest(ts *TenantSeries, tenant, route string, status int) {
	if cs := ts.count.Load(); cs != nil && cs.status == status && cs.route == route {
		cs.c.Inc()
		return
	}
	c := m.requestCounter(tenant, route, status)
	ts.count.Store(&countSeries{route, status, c})
	c.Inc()
}

// TenantLatency is Latency for a tenant's exchange, its series kept in
// ts.
func (m *Metrics) TenantLatency(ts *TenantSeries, tenant string, total, upstream time.Duration) {
	l := ts.latency.Load()
	if l == nil {
		l = m.tenantSeries(tenant)
		ts.latency.Store(l)
	}
	l.observe(total, upstream)
}

// Curated counts what curation made of one request's context (the
// tokens sent, and what it left out, cut and repaired).
func (m *Metrics) Curated(tenant string, r history.Report) {
	t := m.tenantSeries(tenant)
	t.context.Observe(float64(r.Tokens))
	t.saved.Add(float64(r.SavedTokens))
	t.dropped.Add(float64(r.DroppedTurns))
	t.cut.Add(float64(r.TruncatedToolResults))
	t.repaired.Add(float64(r.RepairedCalls))
}

// StoreOp observes one store operation (op: load, commit, sync) that
// took d.
func (m *Metrics) StoreOp(op string, d time.Duration) {
	var o prometheus.Observer
	switch op {
	case "load":
		o = m.storeLoad
	case "commit":
		o = m.storeCommit
	default:
		o = m.store.WithLabelValues(op)
	}
	o.Observe(d.Seconds())
}

// CommitFailed counts an answer that could not be recorded, by reason
// (error, timeout).
func (m *Metrics) CommitFailed(tenant, reason string) {
	m.commits.WithLabelValues(tenant, reason).Inc()
}

// StreamAborted counts a stream that ended without a whole answer.
func (m *Metrics) StreamAborted(tenant string) { m.aborted.WithLabelValues(tenant).Inc() }

// Usage counts the tokens an upstream (its protocol's name) reported for
// a recorded answer.
func (m *Metrics) Usage(tenant, upstream string, input, cached, output int) {
	t := m.tenantSeries(tenant)
	u := t.usage.Load()
	if u == nil || u.upstream != upstream {
		u = &usageSeries{upstream,
			m.tokens.WithLabelValues(tenant, upstream, "input"),
			m.tokens.WithLabelValues(tenant, upstream, "cached"),
			m.tokens.WithLabelValues(tenant, upstream, "output")}
		t.usage.Store(u)
	}
	u.input.Add(float64(input))
	u.cached.Add(float64(cached))
	u.output.Add(float64(output))
}

// ToolCall counts one call of a history tool, by outcome (ok, invalid,
// unknown, error).
func (m *Metrics) ToolCall(tenant, tool, outcome string) {
	m.toolRuns.WithLabelValues(tenant, tool, outcome).Inc()
}

// ToolRounds observes n, the upstream calls of one request with history
// tools offered.
func (m *Metrics) ToolRounds(tenant string, n int) {
	m.rounds.WithLabelValues(tenant).Observe(float64(n))
}

// The outcomes of a request on a conversation another replica owns.
const (
	// HopForwarded: the request went to the owner, which answered it.
	HopForwarded = "forwarded"
	// HopFallback: the owner could not be reached before any byte of
	// its answer came back: the request was served here.
	HopFallback = "fallback"
)

// Hop counts a request on a conversation another replica owns, by
// outcome (HopForwarded, HopFallback).
func (m *Metrics) Hop(outcome string) {
	if outcome == HopFallback {
		m.fellBack.Inc()
		return
	}
	m.forwarded.Inc()
}
