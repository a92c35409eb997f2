// Package app assembles Recall: the chat proxy, the conversation API, the
// Responses and Conversations state (package respstate) and the
// inspector's web page mounted on it, and the summaries manager the proxy
// triggers and the API calls, over one store, one tenant set, one lock
// table, one token counter and one metrics registry. cmd/recall serves
// what New returns, and tests assemble the very same thing.
package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/calibrate"
	"github.com/recallproxy/recall/convlock"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/inspect"
	"github.com/recallproxy/recall/metrics"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/ui"
)

// Config configures an App.
type Config struct {
	// Proxy configures the chat path (Tenants and Store required). Its
	// Tenants, Store, Counter, Metrics, Locks, Logger, Now and
	// MaxBodyBytes serve the API too; New creates the shared Counter,
	// Metrics and Locks when they are nil, and sets API, State (unless
	// set) and, with Summary, Summaries.
	Proxy proxy.Config
	// Summary, if set, configures the summaries manager; its Store,
	// Tenants, Counter, Logger and Registerer default to the proxy's.
	// With Proxy.Tracer set, each job attempt is a span too.
	// Default nil: no manager, and the API's end and summarize answer
	// 501 (unless Proxy.Summaries is an api.Summarizer).
	Summary *summary.Config
	// API, if set, adjusts the conversation API's configuration before it
	// is built (its heavy-call bounds; a test's fakes).
	API func(*api.Config)
	// Exchanges, if set, adjusts the exchange-record writer's options
	// before it starts (a test's clock for its batching delay).
	Exchanges func(*inspect.Options)
}

// App is Recall assembled.
type App struct {
	// Server serves every route: chat, pass-through, health, metrics,
	// the conversation API and the inspector's page.
	Server *proxy.Server
	// API is the conversation API the server mounts.
	API *api.Handler
	// Summaries is the summaries manager (nil without Config.Summary):
	// the caller starts it (Start) and closes it after the server.
	Summaries *summary.Manager
	// Exchanges writes the exchange records the server makes (the
	// inspector's) to the store, off the request path: the caller closes
	// it after the server, which writes what is queued.
	Exchanges *inspect.Writer
	// UI is the inspector's web page the server mounts at /recall/ui/.
	UI *ui.Handler
	// Calibration learns, per tenant and model, how the upstream counts
	// prompts against Recall's estimate, and corrects budgets by it; it
	// keeps what it learned in the store (if it can) in the background:
	// the caller closes it after the server, which writes what changed.
	Calibration *calibrate.Calibrator
}

// New assembles an App from cfg.
func New(cfg Config) (*App, error) {
	p := cfg.Proxy
	if p.Tenants == nil || p.Store == nil {
		return nil, errors.New("app: config needs Proxy.Tenants and Proxy.Store")
	}
	sharedDefaults(&p)
	a := &App{}
	// Exchange records (the chat path's and the summariser's) go to the
	// store through one writer, off the request path.
	wo := inspect.Options{Logger: p.Logger, Registerer: p.Metrics.Registry()}
	if cfg.Exchanges != nil {
		cfg.Exchanges(&wo)
	}
	w, err := inspect.NewWriter(p.Store, wo)
	if err != nil {
		return nil, err
	}
	if cfg.Summary != nil {
		m, err := summary.New(summaryConfig(*cfg.Summary, &p, w))
		if err != nil {
			w.Close(context.Background())
			return nil, err
		}
		a.Summaries, p.Summaries = m, m
	}

	a.Calibration = loadCalibration(&p)
	built := false
	defer func() {
		if !built {
			a.Calibration.Close(context.Background())
			w.Close(context.Background())
		}
	}()
	if err := p.Metrics.Registry().Register(a.Calibration); err != nil {
		return nil, fmt.Errorf("app: register calibration metrics: %w", err)
	}
	if p.Calibration == nil {
		p.Calibration = a.Calibration
	}

	if a.API, err = api.New(apiConfig(&cfg, &p, a.Calibration, w)); err != nil {
		return nil, err
	}
	p.API = a.API.Handle
	if p.State == nil {
		// The Responses and Conversations state: pages of items run
		// under the API's heavy-call limiter.
		if p.State, err = respstate.New(respstate.Config{Store: p.Store, Lock: p.Locks.Acquire, Leaser: p.Leaser,
			Now: p.Now, Counter: p.Counter, Heavy: a.API.EnterHeavy, Logger: p.Logger}); err != nil {
			return nil, err
		}
	}
	if a.UI, err = ui.New(); err != nil {
		return nil, err
	}
	p.UI = a.UI.Handle
	p.OnExchange = recordThen(w, p.OnExchange)
	if a.Server, err = proxy.New(p); err != nil {
		return nil, err
	}
	a.Exchanges = w
	built = true
	return a, nil
}

// sharedDefaults creates what the proxy shares with the rest when p
// leaves it nil: the token counter, the metrics, the lock table.
func sharedDefaults(p *proxy.Config) {
	if p.Counter == nil {
		p.Counter = &tokens.Counter{}
	}
	if p.Metrics == nil {
		p.Metrics = metrics.New(nil)
	}
	if p.Locks == nil {
		p.Locks = &convlock.Table{}
	}
}

// recordThen is an exchange hook that hands the record to w, then to on
// when set.
func recordThen(w *inspect.Writer, on func(history.Key, history.ExchangeRecord)) func(history.Key, history.ExchangeRecord) {
	if on == nil {
		return w.Record
	}
	return func(k history.Key, r history.ExchangeRecord) { w.Record(k, r); on(k, r) }
}

// summaryConfig completes sc from the proxy's configuration p: its
// store, tenants, counter, logger and registry where sc has none; its
// exchange records go to w; each job attempt is a span with p's tracer.
func summaryConfig(sc summary.Config, p *proxy.Config, w *inspect.Writer) summary.Config {
	if sc.Store == nil {
		sc.Store = p.Store
	}
	if sc.Tenants == nil {
		sc.Tenants = p.Tenants
	}
	if sc.Counter == nil {
		sc.Counter = p.Counter
	}
	if sc.Logger == nil {
		sc.Logger = p.Logger
	}
	if sc.Registerer == nil {
		sc.Registerer = p.Metrics.Registry()
	}
	sc.OnExchange = recordThen(w, sc.OnExchange)
	if p.Tracer != nil {
		sc.OnJobDone = tracedJobs(p.Tracer, clock(sc.Now), sc.OnJobDone)
	}
	return sc
}

// loadCalibration makes the calibrator, read back from the store, and
// kept there, when the store can keep it; without, it is learned afresh
// at every start (a failed read is logged, not fatal).
func loadCalibration(p *proxy.Config) *calibrate.Calibrator {
	co := calibrate.Options{Logger: p.Logger, Now: p.Now}
	if cs, ok := p.Store.(history.CalibrationStore); ok {
		co.Store = cs
	}
	c := calibrate.New(co)
	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := c.Load(lctx)
	cancel()
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		if p.Logger != nil {
			p.Logger.Warn("calibrations not read from the store: learned afresh", "component", "calibrate", "error", err.Error())
		}
	}
	return c
}

// apiConfig is the conversation API's configuration over the proxy's
// (p) store, tenants, locks, counter and metrics, adjusted by cfg.API,
// with each call a span when p has a tracer.
func apiConfig(cfg *Config, p *proxy.Config, cal *calibrate.Calibrator, w *inspect.Writer) api.Config {
	tenants, met := p.Tenants, p.Metrics
	ac := api.Config{
		Store: p.Store,
		Authenticate: func(rc *fasthttp.RequestCtx) (auth.Caller, error) {
			return auth.API(tenants.Current(), &rc.Request.Header)
		},
		Lock:         p.Locks.Acquire,
		Counter:      p.Counter,
		MaxBodyBytes: p.MaxBodyBytes,
		Now:          p.Now,
		Logger:       p.Logger,
		Observe: func(tenant, route string, status int) {
			met.CountRequest(tenant, "api_"+route, status)
		},
		Calibration: cal,
		// The exchanges calls list what answered before them: the
		// records wait in the writer's queue for a batch.
		FlushExchanges: w.Flush,
	}
	if s, ok := p.Summaries.(api.Summarizer); ok {
		ac.Summarizer = s
	}
	if cfg.API != nil {
		cfg.API(&ac)
	}
	if p.Tracer != nil {
		ac.OnServed = tracedAPI(p.Tracer, clock(p.Now), ac.OnServed)
	}
	return ac
}

// clock is now, or time.Now if now is nil.
func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
