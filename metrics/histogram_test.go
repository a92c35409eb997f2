package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestDurationVecExposedAsClientGolangs observes the same durations,
// bucket bounds among them, in a durationVec and in client_golang's
// histogram and checks that both expose the same buckets, count and sum
// for each label value.
func TestDurationVecExposedAsClientGolangs(t *testing.T) {
	buckets := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	ours := newDurationVec("d_seconds", "durations", "tenant", buckets)
	theirs := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "d_seconds", Help: "durations", Buckets: buckets}, []string{"tenant"})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		tenant := []string{"a", "b", ""}[i%3]
		var d time.Duration
		switch i % 4 {
		case 0: // a bound exactly: counted in its own bucket (le is inclusive)
			d = time.Duration(buckets[rng.IntN(len(buckets))] * float64(time.Second))
		case 1: // past the last bound: +Inf
			d = 120*time.Second + time.Duration(rng.Int64N(int64(time.Hour)))
		default:
			d = time.Duration(math.Exp(rng.Float64()*20) * float64(time.Microsecond))
		}
		ours.with(tenant).observe(d)
		theirs.WithLabelValues(tenant).Observe(d.Seconds())
	}
	got, want := collected(t, ours), collected(t, theirs)
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("got %d series, client_golang %d, want 3", len(got), len(want))
	}
	for label, w := range want {
		g, ok := got[label]
		if !ok {
			t.Fatalf("no series for tenant %q", label)
		}
		if g.GetSampleCount() != w.GetSampleCount() {
			t.Errorf("tenant %q: count %d, client_golang %d", label, g.GetSampleCount(), w.GetSampleCount())
		}
		if math.Abs(g.GetSampleSum()-w.GetSampleSum()) > 1e-6*w.GetSampleSum() {
			t.Errorf("tenant %q: sum %g, client_golang %g", label, g.GetSampleSum(), w.GetSampleSum())
		}
		if len(g.Bucket) != len(w.Bucket) {
			t.Fatalf("tenant %q: %d buckets, client_golang %d", label, len(g.Bucket), len(w.Bucket))
		}
		for i := range w.Bucket {
			if g.Bucket[i].GetUpperBound() != w.Bucket[i].GetUpperBound() || g.Bucket[i].GetCumulativeCount() != w.Bucket[i].GetCumulativeCount() {
				t.Errorf("tenant %q bucket %d: le %g count %d, client_golang le %g count %d", label, i,
					g.Bucket[i].GetUpperBound(), g.Bucket[i].GetCumulativeCount(), w.Bucket[i].GetUpperBound(), w.Bucket[i].GetCumulativeCount())
			}
		}
	}
}

// collected gathers c's histograms by their one label's value.
func collected(t *testing.T, c prometheus.Collector) map[string]*dto.Histogram {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.Histogram)
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			out[m.Label[0].GetValue()] = m.Histogram
		}
	}
	return out
}
