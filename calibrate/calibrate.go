// Package calibrate learns, per tenant and model, how the upstream counts
// a prompt against Recall's estimate of it (DESIGN.md section 13): the
// ratio of the input tokens an answered exchange reported to the tokens
// Recall estimated it sent. Recall's estimate is a tokenizer's count plus
// fixed overheads; a provider's own count differs by model (its template,
// its tokenizer, images, tools). The learned ratio corrects the budget
// curation works to (see plan.Input.Ratio), is shown on the conversation
// and is exported in /metrics.
//
// A Calibrator is safe for concurrent use. Its hot calls, Ratio and
// Observe, take a mutex over a small map and allocate nothing once a
// model is known; it writes what changed to a history.CalibrationStore in
// the background, at most once per Interval per tenant.
package calibrate

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallproxy/recall/history"
)

// Bounds of what is learned.
const (
	// MinRatio and MaxRatio bound a sample and so the ratio: a provider
	// counting twice or half what Recall estimates is already far off;
	// past that, a sample says more about the exchange than the model.
	MinRatio = 0.5
	MaxRatio = 2.0
	// MinEstimate is the smallest estimate a sample is taken from: fixed
	// overheads dominate tiny prompts.
	MinEstimate = 64
	// absurdLow and absurdHigh bound the samples taken at all (then
	// clamped): past them the usage is not this prompt's (a provider
	// adding a long hidden prompt, a count of several calls).
	absurdLow  = 0.1
	absurdHigh = 20.0
	// minAlpha is the moving average's weight of a new sample once the
	// first 1/minAlpha samples (averaged evenly) are in.
	minAlpha = 0.1
)

// Options configure a Calibrator. The zero value is usable.
type Options struct {
	// Store keeps calibrations across restarts (Load reads them back).
	// Default nil: learned afresh at every start.
	Store history.CalibrationStore
	// Interval is how often what changed is written to Store. Default 30s.
	Interval time.Duration
	// MinSamples is how many samples a model needs before its ratio is
	// applied: until then it is 1. Default 3.
	MinSamples int
	// MaxModels bounds the models tracked per tenant (and so the metric's
	// labels): a new model past it evicts the one updated longest ago.
	// Default 32.
	MaxModels int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives failed writes. Default: discarded.
	Logger *slog.Logger
}

// Calibrator learns and serves ratios. Close stops its writer.
type Calibrator struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	tenants map[string]*models

	desc    *prometheus.Desc
	closing chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// models are one tenant's calibrations; dirty says some changed since the
// last write.
type models struct {
	by    map[string]*entry
	dirty bool
}

// entry is one model's average (avg, over samples), the input window
// the upstream stated (0: none), and its last update.
type entry struct {
	avg     float64
	samples int
	window  int
	updated int64
}

// New starts a Calibrator: with a Store, a goroutine writes changes every
// Interval until Close.
func New(o Options) *Calibrator {
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 3
	}
	if o.MaxModels <= 0 {
		o.MaxModels = 32
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Calibrator{o: o, log: o.Logger, tenants: map[string]*models{},
		desc: prometheus.NewDesc("recall_calibration_ratio",
			"Ratio of the upstream's reported input tokens to Recall's estimate, by tenant and model, as applied to the budget (1 until learned).",
			[]string{"tenant", "model"}, nil),
		closing: make(chan struct{}), stopped: make(chan struct{})}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if o.Store == nil {
		close(c.stopped)
		return c
	}
	go c.run()
	return c
}

// Ratio is the ratio applied to tenant's prompts for model: the learned
// average once it has MinSamples samples, else 1.
func (c *Calibrator) Ratio(tenant, model string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.lookup(tenant, model); e != nil && e.samples >= c.o.MinSamples {
		return e.avg
	}
	return 1
}

// Learned is Ratio with the input window the upstream stated for the
// model (Window; 0: none), in one look.
func (c *Calibrator) Learned(tenant, model string) (ratio float64, window int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.lookup(tenant, model)
	if e == nil {
		return 1, 0
	}
	ratio = 1
	if e.samples >= c.o.MinSamples {
		ratio = e.avg
	}
	return ratio, e.window
}

// Window is the input window the upstream stated for tenant's model when
// it refused a prompt as too long (LearnWindow), 0 if none.
func (c *Calibrator) Window(tenant, model string) int {
	_, w := c.Learned(tenant, model)
	return w
}

// MinWindow is the smallest window LearnWindow takes: an error message
// stating less is not about the model's context.
const MinWindow = 512

// LearnWindow learns that the upstream takes at most window input tokens
// of tenant's model, as an answer refusing a prompt as too long stated
// (see WindowFromError). It reports whether the window was taken.
func (c *Calibrator) LearnWindow(tenant, model string, window int) bool {
	if window < MinWindow || model == "" {
		return false
	}
	now := c.o.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(tenant, model)
	if e.window == window {
		return true
	}
	e.window, e.updated = window, now
	c.tenants[tenant].dirty = true
	return true
}

// entry returns tenant's entry for model, made (evicting the oldest past
// MaxModels) if it has none. c.mu is held.
func (c *Calibrator) entry(tenant, model string) *entry {
	ms := c.tenants[tenant]
	if ms == nil {
		ms = &models{by: map[string]*entry{}}
		c.tenants[strings.Clone(tenant)] = ms
	}
	e := ms.by[model]
	if e == nil {
		if len(ms.by) >= c.o.MaxModels {
			ms.evictOldest()
		}
		e = &entry{}
		// The model may point into a request's body: keep a copy.
		ms.by[strings.Clone(model)] = e
	}
	return e
}

// Get returns tenant's calibration of model (Ratio as applied), and
// whether any sample of it was learned. A model not tracked under its own
// name is looked up by the longest tracked name it extends with a "-"
// (an answer's "gpt-4o-2024-08-06" is a request's "gpt-4o"), whose name
// the calibration then carries.
func (c *Calibrator) Get(tenant, model string) (history.Calibration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.lookup(tenant, model); e != nil {
		return c.calibration(model, e), true
	}
	best := ""
	if ms := c.tenants[tenant]; ms != nil {
		for m := range ms.by {
			if len(m) > len(best) && strings.HasPrefix(model, m+"-") {
				best = m
			}
		}
	}
	if best == "" {
		return history.Calibration{Model: model, Ratio: 1}, false
	}
	return c.calibration(best, c.lookup(tenant, best)), true
}

// calibration is e as shown: its Ratio as applied. c.mu is held.
func (c *Calibrator) calibration(model string, e *entry) history.Calibration {
	r := 1.0
	if e.samples >= c.o.MinSamples {
		r = e.avg
	}
	return history.Calibration{Model: model, Ratio: r, Samples: e.samples, Window: e.window, UpdatedAt: e.updated}
}

func (c *Calibrator) lookup(tenant, model string) *entry {
	if ms := c.tenants[tenant]; ms != nil {
		return ms.by[model]
	}
	return nil
}

// Observe learns from one answered exchange of tenant with model: Recall
// estimated it sent estimated input tokens, the upstream reported
// reported. A sample whose estimate is under MinEstimate, or whose ratio
// is absurd, is ignored; any other is clamped to [MinRatio, MaxRatio].
// It reports whether the sample was taken.
func (c *Calibrator) Observe(tenant, model string, estimated, reported int) bool {
	if estimated < MinEstimate || reported <= 0 || model == "" {
		return false
	}
	r := float64(reported) / float64(estimated)
	if r < absurdLow || r > absurdHigh {
		return false
	}
	r = min(max(r, MinRatio), MaxRatio)
	now := c.o.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(tenant, model)
	e.samples++
	// An even average of the first samples, then a moving one: a fresh
	// model learns fast, a known one follows a change without jumping
	// on one odd exchange.
	alpha := max(1/float64(e.samples), minAlpha)
	e.avg += alpha * (r - e.avg)
	e.updated = now
	c.tenants[tenant].dirty = true
	return true
}

// evictOldest forgets the model updated longest ago.
func (ms *models) evictOldest() {
	var oldest string
	var at int64 = math.MaxInt64
	for m, e := range ms.by {
		if e.updated < at || e.updated == at && m < oldest {
			oldest, at = m, e.updated
		}
	}
	delete(ms.by, oldest)
}

// Load reads the calibrations Store keeps into c (the newest MaxModels of
// each tenant), replacing what c knows of those models.
func (c *Calibrator) Load(ctx context.Context) error {
	if c.o.Store == nil {
		return nil
	}
	all, err := c.o.Store.Calibrations(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for tenant, cals := range all {
		cals = slices.Clone(cals)
		slices.SortFunc(cals, func(a, b history.Calibration) int { return int(min(max(b.UpdatedAt-a.UpdatedAt, -1), 1)) })
		if len(cals) > c.o.MaxModels {
			cals = cals[:c.o.MaxModels]
		}
		ms := c.tenants[tenant]
		if ms == nil {
			ms = &models{by: map[string]*entry{}}
			c.tenants[tenant] = ms
		}
		for _, cal := range cals {
			learned := cal.Samples > 0 && cal.Ratio >= MinRatio && cal.Ratio <= MaxRatio
			if cal.Model == "" || !learned && cal.Window < MinWindow {
				continue // not one Observe or LearnWindow could have made
			}
			if !learned {
				cal.Ratio, cal.Samples = 1, 0
			}
			if _, ok := ms.by[cal.Model]; !ok && len(ms.by) >= c.o.MaxModels {
				ms.evictOldest()
			}
			ms.by[cal.Model] = &entry{avg: cal.Ratio, samples: cal.Samples, window: windowOf(cal.Window), updated: cal.UpdatedAt}
		}
	}
	return nil
}

// windowOf is a stored window as LearnWindow would have taken it.
func windowOf(w int) int {
	if w < MinWindow {
		return 0
	}
	return w
}

// Flush writes every tenant whose calibrations changed since the last
// write, now.
func (c *Calibrator) Flush(ctx context.Context) error {
	if c.o.Store == nil {
		return nil
	}
	type put struct {
		tenant string
		cals   []history.Calibration
	}
	var puts []put
	c.mu.Lock()
	for tenant, ms := range c.tenants {
		if !ms.dirty {
			continue
		}
		ms.dirty = false
		cals := make([]history.Calibration, 0, len(ms.by))
		for m, e := range ms.by {
			r := e.avg
			if e.samples == 0 {
				r = 1 // a window learned before any sample
			}
			cals = append(cals, history.Calibration{Model: m, Ratio: r, Samples: e.samples, Window: e.window, UpdatedAt: e.updated})
		}
		slices.SortFunc(cals, func(a, b history.Calibration) int { return strings.Compare(a.Model, b.Model) })
		puts = append(puts, put{tenant, cals})
	}
	c.mu.Unlock()
	var first error
	for _, p := range puts {
		if err := c.o.Store.PutCalibrations(ctx, p.tenant, p.cals); err != nil {
			c.mu.Lock()
			if ms := c.tenants[p.tenant]; ms != nil {
				ms.dirty = true // written again next time
			}
			c.mu.Unlock()
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// Close writes what changed and stops the writer, or gives up when ctx
// ends.
func (c *Calibrator) Close(ctx context.Context) error {
	c.once.Do(func() { close(c.closing) })
	select {
	case <-c.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	return c.Flush(ctx)
}

func (c *Calibrator) run() {
	defer close(c.stopped)
	t := time.NewTicker(c.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := c.Flush(ctx); err != nil {
				c.log.Warn("calibrations not stored", "component", "calibrate", "error", err.Error())
			}
			cancel()
		case <-c.closing:
			return
		}
	}
}

// Describe implements prometheus.Collector.
func (c *Calibrator) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: one gauge per tracked tenant
// and model, the ratio as applied.
func (c *Calibrator) Collect(ch chan<- prometheus.Metric) {
	// Gathered under the lock, sent after it: a slow scrape must not hold
	// the chat path's Observe.
	var ms []prometheus.Metric
	c.mu.Lock()
	for tenant, by := range c.tenants {
		for m, e := range by.by {
			ms = append(ms, prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.calibration(m, e).Ratio, tenant, m))
		}
	}
	c.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

var _ prometheus.Collector = (*Calibrator)(nil)
