package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Recall's added time over the measured part comes from the difference
// of two scrapes, summed over tenants, interpolated within buckets.
func TestOverheadQuantiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: overheadMetric,
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1}}, []string{"tenant"})
	reg.MustRegister(h)
	text := func() *bytes.Buffer {
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
