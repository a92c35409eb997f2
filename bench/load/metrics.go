package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// overheadMetric is the histogram of the time Recall adds to a request
// (end to end minus the upstream's answer): the open-loop rows read
// Recall's own tail from it, not only through the load generator, whose
// core the fake upstream shares.
const overheadMetric = "recall_overhead_seconds"

// buckets is a histogram's cumulative counts by upper bound, summed over
// its label sets (tenants).
type buckets map[float64]uint64

// scrape reads histogram name from a Prometheus text endpoint.
func scrape(url, name string) (buckets, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return parseHistogram(resp.Body, name)
}

func parseHistogram(r io.Reader, name string) (buckets, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	f, ok := families[name]
	if !ok {
		return nil, fmt.Errorf("no histogram %s", name)
	}
	out := buckets{}
	for _, m := range f.GetMetric() {
		h := m.GetHistogram()
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) { // the count's, below
				out[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
		out[math.Inf(1)] += h.GetSampleCount()
	}
	return out, nil
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
