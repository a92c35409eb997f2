// Package e2etest runs the whole assembled Recall server for tests that
// drive it over HTTP: the server app.New builds, on a loopback port, over
// a real Badger store in t.TempDir() (or a PostgreSQL database, with
// Options.PostgreSQL), in front of the strict fake upstream of
// internal/upstreamtest.
//
// New starts one; the Harness it returns gives the parts a test looks at
// (the fake upstream, the store, the log) and signals to wait on instead
// of sleeping (Done for every finished exchange, Jobs for every summary
// job). Its helpers send requests as a client would: the official OpenAI
// SDK (Client), raw HTTP (Post, Raw) and the conversation API (API, whose
// answers are checked against the OpenAPI document).
package e2etest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/calibrate"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/inspect"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/uplink"
)

// Harness is a real Recall server on a loopback port, in front of the
// fake upstream, over a real Badger store in a temporary directory. The
// test's cleanup shuts it down and closes the store.
type Harness struct {
	T         *testing.T
	Up        *upstreamtest.Server // the fake upstream every tenant points at
	Server    *proxy.Server
	Store     *badgerstore.Store // the Badger store under History (nil over PostgreSQL)
	Backing   history.Store      // the store under History: Store, or Options.PostgreSQL's
	Set       *config.Set        // the tenants the server was started with
	History   history.Store      // the store the server uses: a cache over Store, as cmd/recall serves
	Summaries *summary.Manager   // nil unless Options.Summary is set
	Exchanges *inspect.Writer    // writes the exchange records the server makes (Flush waits for them)
	// Calibration is the server's calibration (Flush writes it to the
	// store at once).
	Calibration *calibrate.Calibrator
	Jobs        chan summary.JobDone // every summary job attempt, in order; nil without Summaries
	URL         string               // http://127.0.0.1:port
	Logs        *LogBuffer           // the server's JSON log, at debug level
	// Done receives every finished exchange, in order. A test that makes
	// more than 4096 exchanges without reading it fails.
	Done chan proxy.ExchangeDone
}

// Options change a Harness from its defaults: pass-through mode (no tenant
// files, the client's key goes upstream) with a 16,000-token budget and
// no summaries manager.
type Options struct {
	// Tenants maps a file name to a tenant's YAML, written to the tenants
	// directory; "{{UPSTREAM}}" in it is replaced by the fake upstream's
	// URL.
	Tenants map[string]string
	// Global, if set, adjusts the global configuration before the tenants
	// are loaded.
	Global func(*config.Global)
	// Proxy, if set, adjusts the proxy's configuration last.
	Proxy func(*proxy.Config)
	// Summary, if set, runs a summary.Manager (configured by it) that the
	// server triggers; its jobs are reported on Harness.Jobs.
	Summary func(*summary.Config)
	// API, if set, adjusts the conversation API's configuration.
	API func(*api.Config)
	// Exchanges, if set, adjusts the exchange-record writer's options.
	Exchanges func(*inspect.Options)
	// Upstream are options of the fake upstream.
	Upstream []upstreamtest.Option
	// Listener, if set, wraps the server's listener (a test that watches
	// the connections' writes).
	Listener func(net.Listener) net.Listener
	// PostgreSQL, if set, is the URL of an empty database (pgtest.DB) the
	// server stores in, in place of Badger.
	PostgreSQL string
}

// New starts a Harness for the duration of t.
func New(t *testing.T, o Options) *Harness {
	t.Helper()
	h := &Harness{T: t, Up: upstreamtest.NewTB(t, o.Upstream...), Logs: &LogBuffer{}, Done: make(chan proxy.ExchangeDone, 4096)}
	g := h.global(o)
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("load tenants: %v", err)
	}
	h.Set = set
	closeStore := h.openStore(o)
	h.History = history.NewCache(h.Backing, 0, 0)
	cfg, client, buffering := h.proxyConfig(set)
	ac := app.Config{API: o.API, Exchanges: o.Exchanges}
	if o.Summary != nil {
		ac.Summary = h.summaryConfig(o, &cfg)
	}
	adjustProxy(o, &cfg, client, buffering)
	ac.Proxy = cfg
	a, err := app.New(ac)
	if err != nil {
		t.Fatal(err)
	}
	h.Server, h.Summaries, h.Exchanges, h.Calibration = a.Server, a.Summaries, a.Exchanges, a.Calibration
	if h.Summaries != nil {
		if err := h.Summaries.Start(context.Background()); err != nil {
			t.Logf("summary start: %v (the store cannot list yet)", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.URL = "http://" + ln.Addr().String()
	if o.Listener != nil {
		ln = o.Listener(ln)
	}
	go h.Server.Serve(ln)
	t.Cleanup(func() { h.shutdown(closeStore) })
	return h
}

// global is the global configuration: the defaults, upstream at the
// fake, o.Tenants' files written to a directory of their own, adjusted
// by o.Global.
func (h *Harness) global(o Options) config.Global {
	h.T.Helper()
	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = h.Up.URL()
	if len(o.Tenants) > 0 {
		dir := h.T.TempDir()
		for name, body := range o.Tenants {
			body = strings.ReplaceAll(body, "{{UPSTREAM}}", h.Up.URL())
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				h.T.Fatal(err)
			}
		}
		g.TenantsDir = dir
	}
	if o.Global != nil {
		o.Global(&g)
	}
	return g
}

// openStore opens the store, PostgreSQL's when o names one, else
// Badger in a temporary directory, and returns what closes it.
func (h *Harness) openStore(o Options) (closeStore func()) {
	h.T.Helper()
	if o.PostgreSQL != "" {
		pg, err := pgstore.Open(context.Background(), o.PostgreSQL, pgstore.Options{})
		if err != nil {
			h.T.Fatal(err)
		}
		h.Backing = pg
		return pg.Close
	}
	var err error
	h.Store, err = badgerstore.Open(h.T.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		h.T.Fatal(err)
	}
	h.Backing = h.Store
	return func() { h.Store.Close() }
}

// proxyConfig is the proxy's configuration over set and the harness's
// store, logs and exchange-done channel, with the upstream clients it
// made (adjustProxy adjusts it).
func (h *Harness) proxyConfig(set *config.Set) (cfg proxy.Config, client, buffering *fasthttp.Client) {
	t := h.T
	client, buffering = uplink.DefaultClient(), uplink.BufferingClient(64<<20)
	// Idle upstream connections, and fasthttp's goroutines that watch
	// them, go within a second of the harness's end (leak checks).
	client.MaxIdleConnDuration = time.Second
	buffering.MaxIdleConnDuration = time.Second
	cfg = proxy.Config{
		Client:          client,
		BufferingClient: buffering,
		Tenants:         proxy.StaticTenants{Set: set},
		Store:           h.History, // the cache over Badger, as cmd/recall serves
		Logger:          slog.New(slog.NewJSONHandler(h.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnExchangeDone: func(d proxy.ExchangeDone) {
			select {
			case h.Done <- d:
			default:
				t.Errorf("exchange-done buffer full: a test forgot to drain it")
			}
		},
	}
	return cfg, client, buffering
}

// adjustProxy adjusts cfg by o.Proxy: a test's client sees every
// request, and the buffering client keeps to its response limit.
func adjustProxy(o Options, cfg *proxy.Config, client, buffering *fasthttp.Client) {
	if o.Proxy != nil {
		o.Proxy(cfg)
		if cfg.Client != client && cfg.BufferingClient == buffering {
			cfg.BufferingClient = cfg.Client // a test's client sees every request
		}
	}
	if cfg.BufferingClient == buffering && cfg.MaxResponseBytes > 0 {
		buffering.MaxResponseBodySize = cfg.MaxResponseBytes // as proxy.New's own
	}
}

// summaryConfig is the summaries' configuration over the proxy's
// store, tenants and logger (as cfg had them before o.Proxy adjusted
// it), its finished jobs sent to h.Jobs, adjusted by o.Summary.
func (h *Harness) summaryConfig(o Options, cfg *proxy.Config) *summary.Config {
	t := h.T
	h.Jobs = make(chan summary.JobDone, 1024)
	sc := summary.Config{
		Store:   cfg.Store,
		Tenants: cfg.Tenants,
		Logger:  cfg.Logger,
		OnJobDone: func(d summary.JobDone) {
			select {
			case h.Jobs <- d:
			default:
				t.Errorf("summary job buffer full")
			}
		},
	}
	o.Summary(&sc)
	return &sc
}

// shutdown stops the server, then the summaries, the exchange records'
// and calibrations' writers, and the store (closeStore).
func (h *Harness) shutdown(closeStore func()) {
	t := h.T
	// Closing the client's idle connections first lets the server's
	// shutdown finish at once instead of waiting out keep-alives.
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Server.Shutdown(ctx); err != nil {
		buf := make([]byte, 1<<20)
		t.Errorf("shutdown: %v; goroutines:\n%s", err, buf[:runtime.Stack(buf, true)])
	}
	if h.Summaries != nil {
		h.Summaries.Close()
	}
	if err := h.Exchanges.Close(ctx); err != nil {
		t.Errorf("exchange records not written at shutdown: %v", err)
	}
	if err := h.Calibration.Close(ctx); err != nil {
		t.Errorf("calibrations not written at shutdown: %v", err)
	}
	closeStore()
}

// WaitDone waits for the next finished exchange on conv (a stream's
// commit happens after the client saw its last event), skipping others.
// It fails the test after 10 seconds.
func (h *Harness) WaitDone(conv string) proxy.ExchangeDone {
	h.T.Helper()
	return next(h.T, h.Done, func(d proxy.ExchangeDone) bool { return d.Conversation == conv },
		"no exchange on "+conv+" finished within 10s")
}

// WaitJob waits for the next summary job attempt on conv whose outcome is
// not Nothing (jobs that found nothing to do are skipped). It fails the
// test after 10 seconds.
func (h *Harness) WaitJob(conv string) summary.JobDone {
	h.T.Helper()
	return next(h.T, h.Jobs, func(d summary.JobDone) bool { return d.Key.Conversation == conv && d.Outcome != summary.Nothing },
		"no summary job on "+conv+" finished within 10s")
}

// next returns the next value from ch that keep accepts, skipping the
// others; after 10 seconds it fails t with fail.
func next[T any](t *testing.T, ch <-chan T, keep func(T) bool, fail string) T {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case v := <-ch:
			if keep(v) {
				return v
			}
		case <-timeout:
			t.Fatal(fail)
		}
	}
}

// Client returns an official OpenAI SDK client pointed at Recall, naming
// conversation conv by header (none if conv is ""). It never retries.
func (h *Harness) Client(key, conv string, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.URL + "/v1"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	}
	if conv != "" {
		base = append(base, option.WithHeader("X-Conversation-ID", conv))
	}
	return openai.NewClient(append(base, opts...)...)
}

// Stored returns a conversation's messages as stored, inactive ones too,
// read from the store under the cache.
func (h *Harness) Stored(tenant, conv string) []history.Message {
	h.T.Helper()
	var out []history.Message
	err := h.Backing.Messages(context.Background(), history.Key{Tenant: tenant, Conversation: conv}, 0, true,
		func(m history.Message) bool { out = append(out, m); return true })
	if err != nil {
		h.T.Fatal(err)
	}
	return out
}

// Meta returns a conversation's metadata as the server sees it.
func (h *Harness) Meta(tenant, conv string) history.Meta {
	h.T.Helper()
	snap, err := h.History.Load(context.Background(), history.Key{Tenant: tenant, Conversation: conv}, history.Query{After: ^uint64(0)})
	if err != nil {
		h.T.Fatal(err)
	}
	return snap.Meta
}

// PassNamespace is the history namespace of a pass-through credential.
func (h *Harness) PassNamespace(key string) string {
	return auth.Namespace("default", key)
}

// CountTokens counts a message's tokens as Recall does for gpt-4o.
func (h *Harness) CountTokens(raw []byte) int {
	return counter.Message(tokens.O200k, raw)
}

var counter = &tokens.Counter{}

// SHA256Hex is the hex SHA-256 of s, as a tenant file lists a hashed key.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
