package main

import (
	"bytes"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Recall's added time over the measured part comes from the difference
// of two scrapes, summed over tenants, interpolated within buckets.
func TestOverheadQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: overheadMetric,
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}}, []string{"tenant"})
	reg.MustRegister(h)
	text := func() *bytes.Buffer { return exposition(t, reg) }
	for range 50 { // warm-up, before the measured part: not counted
		h.WithLabelValues("a").Observe(0.0002)
	}
	before, err := parseHistogram(text(), overheadMetric)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 98 {
		h.WithLabelValues([]string{"a", "b"}[i%2]).Observe(0.0003)
	}
	h.WithLabelValues("b").Observe(0.03)
	h.WithLabelValues("a").Observe(0.04)
	after, err := parseHistogram(text(), overheadMetric)
	if err != nil {
		t.Fatal(err)
	}
	q := quantiles(before, after, 0.5, 0.99)
	// 98 of 100 in (0.25, 0.5] ms: the 50th a 50/98 of the way; the 99th
	// halfway through (25, 50] ms, which holds the last 2.
	want := []float64{0.25 + 0.25*50/98, 25 + 25*0.5}
	for i := range q {
		if math.Abs(q[i]-want[i]) > 1e-9 {
			t.Errorf("quantiles = %v, want %v", q, want)
			break
		}
	}
	if q := quantiles(after, after, 0.5); q[0] != 0 {
		t.Errorf("no observations between two scrapes gave %v, want 0", q)
	}
	if _, err := parseHistogram(strings.NewReader("other_total 1\n"), overheadMetric); err == nil {
		t.Error("a scrape without the histogram parsed")
	}
}

// The report shows Recall's own added time of an open row.
func TestReportRecallAdds(t *testing.T) {
	out := reportOf(t, `{"label":"recall-sync/plain/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"recall_p50_ms":2.11,"recall_p99_ms":23.23}
`)
	if want := "| 190.00 | 220.00 | – | – | 2.11 / 23.23 |"; !strings.Contains(out, want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
}

// Badger's log syncs are read from the store histogram's op="sync"
// series alone: p99, and the bucket the longest fell in, or past the
// last bound.
func TestSyncsOfTheMeasuredPart(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: syncMetric,
		Buckets: []float64{.001, .01, .1}}, []string{"op"})
	reg.MustRegister(h)
	read := func() buckets {
		t.Helper()
		p := expfmt.NewTextParser(model.UTF8Validation)
		families, err := p.TextToMetricFamilies(exposition(t, reg))
		if err != nil {
			t.Fatal(err)
		}
		got, err := histogram(families, syncMetric, "op", "sync")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	h.WithLabelValues("sync").Observe(0.5) // before the measured part
	h.WithLabelValues("commit").Observe(0.05)
	before := read()
	for range 99 {
		h.WithLabelValues("sync").Observe(0.0005)
	}
	h.WithLabelValues("sync").Observe(0.05)
	h.WithLabelValues("commit").Observe(5) // another op: not a sync
	after := read()
	if ms, over := largest(before, after); ms != 100 || over {
		t.Errorf("largest = %v (over %v), want ≤ 100 ms", ms, over)
	}
	if n := count(before, after); n != 100 {
		t.Errorf("count = %d syncs, want the measured part's 100", n)
	}
	if q := quantiles(before, after, 0.99)[0]; q != 1 {
		t.Errorf("p99 = %v ms, want 1 (the 99th of 100 at the top of the first bucket)", q)
	}
	h.WithLabelValues("sync").Observe(2)
	if ms, over := largest(after, read()); ms != 100 || !over {
		t.Errorf("largest past the last bound = %v (over %v), want > 100 ms", ms, over)
	}
	if ms, _ := largest(after, after); ms != 0 {
		t.Errorf("largest without observations = %v, want 0", ms)
	}
}

// The report gives Badger's log syncs of the rows that have them.
func TestReportSyncs(t *testing.T) {
	out := reportOf(t, `{"label":"recall-sync/plain/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"sync_p99_ms":12.5,"sync_max_ms":250}
{"label":"recall-pg/plain/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220}
`)
	_, syncs, _ := strings.Cut(out, "**Badger's durable log syncs**")
	syncs, _, _ = strings.Cut(syncs, "\n\n**")
	if !strings.Contains(syncs, "| recall-sync | – | 12.50 / ≤ 250 | – | – |") || strings.Contains(syncs, "recall-pg") {
		t.Errorf("the syncs' table:\n%s\nof the report:\n%s", syncs, out)
	}
}

// exposition is reg's metrics as a /metrics endpoint writes them.
func exposition(t *testing.T, reg *prometheus.Registry) *bytes.Buffer {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return &b
}

// The runtime's assists are read as counters, summed over the replicas'
// endpoints; an endpoint without them leaves the sum unknown (-1), not 0.
func TestAssistsSummedOverReplicas(t *testing.T) {
	serve := func(scav, mark float64) string {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: overheadMetric}))
		if scav >= 0 {
			for name, v := range map[string]float64{scavengeAssistMetric: scav, markAssistMetric: mark} {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: name})
				c.Add(v)
				reg.MustRegister(c)
			}
		}
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b, none := serve(0.25, 1.5), serve(0.5, 2), serve(-1, 0)
	got := (&driver{o: options{metrics: a + "," + b}}).scrape()
	if got.scavAssist != 0.75 || got.markAssist != 3.5 {
		t.Errorf("two replicas: scavenge %v mark %v, want 0.75 and 3.5", got.scavAssist, got.markAssist)
	}
	if got := (&driver{o: options{metrics: a + "," + none}}).scrape(); got.scavAssist != -1 {
		t.Errorf("a replica without the counters: scavenge %v, want -1 (unknown)", got.scavAssist)
	}
}

// The report gives the runtime's assists of the rows that read them,
// zeros included.
func TestReportAssists(t *testing.T) {
	out := reportOf(t, `{"label":"recall-sync/stream/closed","mode":"closed","stream":true,"concurrency":32,"conversations":1000,"rps":3000,"p50_ms":4,"p90_ms":30,"p99_ms":40,"max_ms":90,"scavenge_assist_ms":129.9,"mark_assist_ms":36,"assists":true}
{"label":"recall-sync/plain/open","mode":"open","rate":1000,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":190,"max_ms":220,"assists":true}
{"label":"nginx/plain/open","mode":"open","rate":1000,"concurrency":32,"rps":1000,"p50_ms":1,"p90_ms":1,"p99_ms":2,"max_ms":3}
`)
	_, table, _ := strings.Cut(out, "**The runtime's assists**")
	table, _, _ = strings.Cut(table, "\n\n**")
	if !strings.Contains(table, "| recall-sync | – | 0.0 / 0.0 | 129.9 / 36.0 | – |") || strings.Contains(table, "nginx") {
		t.Errorf("the assists' table:\n%s\nof the report:\n%s", table, out)
	}
}

// Recall's whole handling and the upstream's answers are read beside its
// added time, summed over the replicas; an endpoint without them leaves
// them nil, not empty.
func TestScrapeTotalAndUpstream(t *testing.T) {
	serve := func(total, upstream float64) string {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewHistogram(prometheus.HistogramOpts{Name: overheadMetric}))
		if total > 0 {
			for name, v := range map[string]float64{totalMetric: total, upstreamMetric: upstream} {
				h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Buckets: []float64{.01, .1, 1}}, []string{"tenant"})
				h.WithLabelValues("a").Observe(v)
				reg.MustRegister(h)
			}
		}
		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b := serve(0.5, 0.05), serve(0.005, 0.005)
	got := (&driver{o: options{metrics: a + "," + b}}).scrape()
	if got.total[0.01] != 1 || got.total[1] != 2 || got.upstream[0.01] != 1 || got.upstream[0.1] != 2 {
		t.Errorf("two replicas: total %v upstream %v, want one of two under 10 ms in each, the other under 1 s and 100 ms", got.total, got.upstream)
	}
	if got := (&driver{o: options{metrics: serve(0, 0)}}).scrape(); got.total != nil || got.upstream != nil || got.overhead == nil {
		t.Errorf("an endpoint without them: total %v upstream %v overhead %v, want nil, nil and read", got.total, got.upstream, got.overhead)
	}
}

// The report gives where each row's requests waited (the queue only for
// open rows) and the CPUs' busy share.
func TestReportWaitsAndBusy(t *testing.T) {
	out := reportOf(t, `{"label":"recall-sync/stream/open","mode":"open","rate":1000,"stream":true,"concurrency":32,"conversations":1000,"rps":1000,"p50_ms":4,"p90_ms":30,"p99_ms":830,"max_ms":960,"in_recall_p99_ms":40.5,"upstream_p99_ms":3.25,"queued_p99_ms":790,"cpu_busy_pct":[97.4,88]}
{"label":"recall-sync/plain/closed","mode":"closed","concurrency":32,"conversations":1000,"rps":3000,"p50_ms":4,"p90_ms":30,"p99_ms":40,"max_ms":90,"in_recall_p99_ms":30,"upstream_p99_ms":2}
`)
	_, waits, _ := strings.Cut(out, "**Where the requests waited**")
	waits, _, _ = strings.Cut(waits, "\n\n**")
	if !strings.Contains(waits, "| recall-sync | 30.00 / 2.00 / – | – | – | 40.50 / 3.25 / 790.00 |") {
		t.Errorf("the waits' table:\n%s\nof the report:\n%s", waits, out)
	}
	_, busy, _ := strings.Cut(out, "**The CPUs' busy share**")
	busy, _, _ = strings.Cut(busy, "\n\n**")
	if !strings.Contains(busy, "| recall-sync | – | – | – | 97 / 88 |") {
		t.Errorf("the busy table:\n%s\nof the report:\n%s", busy, out)
	}
}
