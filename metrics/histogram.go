package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// durationVec is a Prometheus histogram of durations by one label, for
// the histograms every request observes: an observation is a scan of the
// bucket bounds in nanoseconds and two atomic adds, where
// client_golang's histogram takes five atomic operations (one a
// compare-and-swap loop on a float sum) and a binary search of float
// bounds. A request observes three (about 85 ns of a plain request's
// 1.2 µs in BenchmarkPlainPath with client_golang's). It is
// exposed as client_golang's histogram is, but a scrape reads the
// buckets one by one: it may see an observation in flight counted in
// its bucket and not yet in the sum.
type durationVec struct {
	desc   *prometheus.Desc
	bounds []time.Duration // the buckets' upper bounds, ascending
	upper  []float64       // the same, in seconds, as exposed

	mu     sync.Mutex
	series map[string]*durationSeries
}

// durationSeries is one label value's histogram.
type durationSeries struct {
	label  string
	bounds []time.Duration
	counts []atomic.Uint64 // one per bound, and the last for +Inf
	sum    atomic.Int64    // nanoseconds
}

func newDurationVec(name, help, label string, buckets []float64) *durationVec {
	v := &durationVec{
		desc:   prometheus.NewDesc(name, help, []string{label}, nil),
		upper:  buckets,
		series: make(map[string]*durationSeries),
	}
	for _, b := range buckets {
		v.bounds = append(v.bounds, time.Duration(b*float64(time.Second)))
	}
	return v
}

// with returns the series of a label value, made on first use.
func (v *durationVec) with(label string) *durationSeries {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.series[label]
	if s == nil {
		s = &durationSeries{label: label, bounds: v.bounds, counts: make([]atomic.Uint64, len(v.bounds)+1)}
		v.series[label] = s
	}
	return s
}

// observe counts d in the first bucket whose bound it does not pass (a
// bucket's bound is inclusive, as Prometheus's le says).
func (s *durationSeries) observe(d time.Duration) {
	i := 0
	for i < len(s.bounds) && d > s.bounds[i] {
		i++
	}
	s.counts[i].Add(1)
	s.sum.Add(int64(d))
}

func (v *durationVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

func (v *durationVec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	all := make([]*durationSeries, 0, len(v.series))
	for _, s := range v.series {
		all = append(all, s)
	}
	v.mu.Unlock()
	for _, s := range all {
		buckets := make(map[float64]uint64, len(v.upper))
		var n uint64
		for i, b := range v.upper {
			n += s.counts[i].Load()
			buckets[b] = n
		}
		n += s.counts[len(v.upper)].Load()
		sum := time.Duration(s.sum.Load()).Seconds()
		ch <- prometheus.MustNewConstHistogram(v.desc, n, sum, buckets, s.label)
	}
}
