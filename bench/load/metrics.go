package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// overheadMetric is the histogram of the time Recall adds to a request
// (end to end minus the upstream's answer): the open-loop rows read
// Recall's own tail from it, not only through the load generator, whose
// core the fake upstream shares.
const overheadMetric = "recall_overhead_seconds"

// totalMetric and upstreamMetric are the histograms of Recall's whole
// handling of a request (from its handler's start to its answer's last
// byte) and of the upstream's answer within it. Beside the load
// generator's latency they say where a slow request waited: before
// Recall's handler ran (the accept queue, a starved core), in Recall, or
// in the upstream.
const (
	totalMetric    = "recall_request_duration_seconds"
	upstreamMetric = "recall_upstream_duration_seconds"
)

// syncMetric is the histogram of the store's operations; its op="sync"
// series is each durable log sync of Badger (none on PostgreSQL).
const syncMetric = "recall_store_duration_seconds"

// The runtime's assists, counters of CPU seconds (Recall's Go collector
// exposes them): work the runtime puts on the goroutine that allocates, a
// request's or Badger's writer's, beside its own background workers.
const (
	scavengeAssistMetric = "go_cpu_classes_scavenge_assist_cpu_seconds_total"
	markAssistMetric     = "go_cpu_classes_gc_mark_assist_cpu_seconds_total"
)

// buckets is a histogram's cumulative counts by upper bound, summed over
// its label sets (tenants).
type buckets map[float64]uint64

// scrapes are what a run reads from Recall's /metrics: its added time,
// its whole handling and the upstream's answers (nil if not exposed),
// its durable log syncs (nil if it has none), and the runtime's
// scavenging and marking assists in CPU seconds (-1 if not exposed).
type scrapes struct {
	overhead, total, upstream, syncs buckets
	scavAssist, markAssist           float64
}

// scrape reads Recall's histograms from a Prometheus text endpoint.
func scrape(url string) (scrapes, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return scrapes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return scrapes{}, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return scrapes{}, err
	}
	var out scrapes
	if out.overhead, err = histogram(families, overheadMetric, "", ""); err != nil {
		return scrapes{}, err
	}
	out.total, _ = histogram(families, totalMetric, "", "")
	out.upstream, _ = histogram(families, upstreamMetric, "", "")
	out.syncs, _ = histogram(families, syncMetric, "op", "sync")
	out.scavAssist = counter(families, scavengeAssistMetric)
	out.markAssist = counter(families, markAssistMetric)
	return out, nil
}

// counter is family name's value summed over its series, -1 if there is
// no such family.
func counter(families map[string]*dto.MetricFamily, name string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func parseHistogram(r io.Reader, name string) (buckets, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return histogram(families, name, "", "")
}

// histogram is family name's buckets, summed over its series whose label
// has value (every series when label is ""); an error if none is there.
func histogram(families map[string]*dto.MetricFamily, name, label, value string) (buckets, error) {
	f, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("no histogram %s", name)
	}
	out := buckets{}
	for _, m := range f.GetMetric() {
		if label != "" && !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == label && l.GetValue() == value }) {
			continue
		}
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the count's, below
				out[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
		out[math.Inf(1)] += h.GetSampleCount()
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no series of %s with %s=%q", name, label, value)
	}
	return out, nil
}

// largest returns, in milliseconds, the upper bound of the highest bucket
// that gained observations between before and after: the largest
// observation is at most that. If it is the +Inf bucket, it returns the
// largest finite bound and over true. 0 without any observation.
func largest(before, after buckets) (ms float64, over bool) {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	top, prev := -1, uint64(0)
	for i, b := range bounds {
		if gain := after[b] - before[b]; gain > prev { // cumulative: new observations in (bounds[i-1], b]
			top, prev = i, gain
		}
	}
	switch {
	case top < 0:
		return 0, false
	case math.IsInf(bounds[top], 1):
		if top == 0 {
			return 0, true
		}
		return bounds[top-1] * 1000, true
	}
	return bounds[top] * 1000, false
}

// count returns how many observations were made between before and
// after.
func count(before, after buckets) uint64 {
	return after[math.Inf(1)] - before[math.Inf(1)]
}

// quantiles returns the q-quantiles, in milliseconds, of the observations
// made between before and after, interpolating linearly within a bucket
// (the +Inf bucket reports the largest finite bound); 0 without any.
func quantiles(before, after buckets, qs ...float64) []float64 {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	out := make([]float64, len(qs))
	if len(bounds) == 0 {
		return out
	}
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total == 0 {
		return out
	}
	for i, q := range qs {
		want := q * float64(total)
		lower, below := 0.0, 0.0
		for _, b := range bounds {
			n := float64(after[b] - before[b])
			if n >= want {
				if math.IsInf(b, 1) {
					out[i] = lower * 1000
					break
				}
				frac := 1.0
				if n > below {
					frac = (want - below) / (n - below)
				}
				out[i] = (lower + (b-lower)*frac) * 1000
				break
			}
			lower, below = b, n
		}
	}
	return out
}

// addBuckets adds b's counts to sum's (nil: none yet) and returns it.
func addBuckets(sum, b buckets) buckets {
	for le, n := range b {
		if sum == nil {
			sum = buckets{}
		}
		sum[le] += n
	}
	return sum
}
