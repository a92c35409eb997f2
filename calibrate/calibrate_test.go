package calibrate_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/recallproxy/recall/calibrate"
	"github.com/recallproxy/recall/history"
)

type sample struct{ estimated, reported int }

func TestRatioLearnedBoundedAndSmoothed(t *testing.T) {
	tests := []struct {
		name        string
		samples     []sample
		wantRatio   float64
		wantSamples int
	}{
		{"fresh model", nil, 1, 0},
		{"too few samples to trust", []sample{{1000, 1500}, {1000, 1500}}, 1, 2},
		{"learned after three", []sample{{1000, 1500}, {1000, 1500}, {1000, 1500}}, 1.5, 3},
		{"clamped high", []sample{{1000, 10000}, {1000, 10000}, {1000, 10000}}, calibrate.MaxRatio, 3},
		{"clamped low", []sample{{1000, 200}, {1000, 200}, {1000, 200}}, calibrate.MinRatio, 3},
		{"tiny estimates ignored", []sample{{10, 30}, {63, 200}, {1000, 1100}}, 1, 1},
		{"absurd ratios ignored", []sample{{1000, 50000}, {1000, 1}, {1000, 0}}, 1, 0},
		{"even average first", []sample{{1000, 1200}, {1000, 1400}, {1000, 1600}}, 1.4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := calibrate.New(calibrate.Options{})
			for _, s := range tt.samples {
				c.Observe("t", "m", s.estimated, s.reported)
			}
			if got := c.Ratio("t", "m"); math.Abs(got-tt.wantRatio) > 1e-9 {
				t.Errorf("got ratio %v, want %v", got, tt.wantRatio)
			}
			got, _ := c.Get("t", "m")
			if got.Samples != tt.wantSamples {
				t.Errorf("got %d samples, want %d", got.Samples, tt.wantSamples)
			}
			if other := c.Ratio("u", "m"); other != 1 {
				t.Errorf("another tenant got ratio %v, want 1", other)
			}
		})
	}
}

// Past the first samples, one odd exchange moves the average a tenth of
// the way.
func TestOneOddSampleMovesTheAverageLittle(t *testing.T) {
	c := calibrate.New(calibrate.Options{})
	for range 20 {
		c.Observe("t", "m", 1000, 1500)
	}
	c.Observe("t", "m", 1000, 500)
	if got, want := c.Ratio("t", "m"), 1.5-0.1; math.Abs(got-want) > 1e-9 {
		t.Errorf("got ratio %v, want %v", got, want)
	}
}

// The models per tenant are capped: the one updated longest ago goes.
func TestModelsCappedOldestEvicted(t *testing.T) {
	now := time.Unix(0, 0)
	c := calibrate.New(calibrate.Options{MaxModels: 2, Now: func() time.Time { now = now.Add(time.Second); return now }})
	c.Observe("t", "a", 1000, 1500)
	c.Observe("t", "b", 1000, 1500)
	c.Observe("t", "a", 1000, 1500) // a is now newer than b
	c.Observe("t", "c", 1000, 1500)
	for model, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := c.Get("t", model); ok != want {
			t.Errorf("model %s tracked: got %v, want %v", model, ok, want)
		}
	}
	if n := testutil.CollectAndCount(c, "recall_calibration_ratio"); n != 2 {
		t.Errorf("got %d gauges, want 2", n)
	}
}

func TestGaugeIsTheAppliedRatio(t *testing.T) {
	c := calibrate.New(calibrate.Options{})
	for range 3 {
		c.Observe("acme", "gpt-x", 1000, 1500)
	}
	c.Observe("acme", "gpt-y", 1000, 1500)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	want := `# HELP recall_calibration_ratio Ratio of the upstream's reported input tokens to Recall's estimate, by tenant and model, as applied to the budget (1 until learned).
# TYPE recall_calibration_ratio gauge
recall_calibration_ratio{model="gpt-x",tenant="acme"} 1.5
recall_calibration_ratio{model="gpt-y",tenant="acme"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "recall_calibration_ratio"); err != nil {
		t.Error(err)
	}
}

// memStore is a history.CalibrationStore in memory.
type memStore struct {
	by   map[string][]history.Calibration
	puts int
}

func (m *memStore) PutCalibrations(_ context.Context, tenant string, cals []history.Calibration) error {
	m.by[tenant] = cals
	m.puts++
	return nil
}

func (m *memStore) Calibrations(context.Context) (map[string][]history.Calibration, error) {
	return m.by, nil
}

// closeFlushed closes c, which writes what it learned to its store.
func closeFlushed(t *testing.T, ctx context.Context, c *calibrate.Calibrator) {
	t.Helper()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// loaded is a new Calibrator on st, closed when the test ends, that has
// loaded what st holds.
func loaded(t *testing.T, ctx context.Context, st history.CalibrationStore) *calibrate.Calibrator {
	t.Helper()
	c := calibrate.New(calibrate.Options{Store: st, Interval: time.Hour})
	t.Cleanup(func() { c.Close(ctx) })
	if err := c.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// What a Calibrator learned comes back in a new one loading the store,
// and only what changed is written.
func TestFlushAndLoad(t *testing.T) {
	ctx := context.Background()
	st := &memStore{by: map[string][]history.Calibration{}}
	c := calibrate.New(calibrate.Options{Store: st, Interval: time.Hour})
	for range 4 {
		c.Observe("t", "m", 1000, 1300)
	}
	closeFlushed(t, ctx, c)
	if err := c.Flush(ctx); err != nil || st.puts != 1 {
		t.Errorf("got %d writes (%v) after a second flush with nothing new, want 1", st.puts, err)
	}
	d := loaded(t, ctx, st)
	got, ok := d.Get("t", "m")
	if !ok || math.Abs(got.Ratio-1.3) > 1e-9 || got.Samples != 4 {
		t.Errorf("got %+v (%v) after loading, want ratio 1.3 over 4 samples", got, ok)
	}
}

// Once a model is known, learning and reading it allocate nothing: both
// run on every chat request.
func TestObserveAndRatioAllocateNothing(t *testing.T) {
	c := calibrate.New(calibrate.Options{})
	c.Observe("t", "m", 1000, 1500)
	if n := testing.AllocsPerRun(100, func() {
		c.Observe("t", "m", 1000, 1500)
		_ = c.Ratio("t", "m")
	}); n != 0 {
		t.Errorf("got %v allocations, want 0", n)
	}
}

// A conversation names the model its answers gave (often dated); the
// calibration is learned under the request's: the longest tracked name
// the answer's extends with a "-" stands for it.
func TestGetFindsARequestModelByItsDatedName(t *testing.T) {
	c := calibrate.New(calibrate.Options{})
	for range 3 {
		c.Observe("t", "gpt-4o", 1000, 1200)
		c.Observe("t", "gpt-4o-mini", 1000, 1600)
	}
	for _, tc := range []struct {
		model, wantModel string
		wantRatio        float64
		ok               bool
	}{
		{"gpt-4o", "gpt-4o", 1.2, true},
		{"gpt-4o-2024-08-06", "gpt-4o", 1.2, true},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini", 1.6, true},
		{"gpt-4o1", "gpt-4o1", 1, false},
		{"o3", "o3", 1, false},
	} {
		got, ok := c.Get("t", tc.model)
		if ok != tc.ok || got.Model != tc.wantModel || math.Abs(got.Ratio-tc.wantRatio) > 1e-9 {
			t.Errorf("Get(%q): got %+v (%v), want %s at %v (%v)", tc.model, got, ok, tc.wantModel, tc.wantRatio, tc.ok)
		}
	}
}
