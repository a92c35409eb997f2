// Package api serves Recall's conversation API, everything under
// /recall/v1/: list, read, search, memorize, forget, erase, export and
// import a tenant's conversations. Handlers call
// history and the store, never the chat pipeline; what the chat pipeline
// owns (the curated context, summaries, per-conversation locks,
// authentication) is injected through Config.
package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tokens"
)

// Prefix is the path every route of the API is under.
const Prefix = "/recall/v1/"

// Summarizer ends episodes and compacts conversations on demand:
// *summary.Manager implements it. Both return the conversation's
// metadata once done; summary's refusals (summary.ErrDisabled,
// ErrNoModel, ErrNotFound) are answered as such.
type Summarizer interface {
	End(ctx context.Context, k history.Key) (history.Meta, error)
	Summarize(ctx context.Context, k history.Key) (history.Meta, error)
}

var _ Summarizer = (*summary.Manager)(nil)

// ContextFunc computes what the next chat request on k would send
// upstream for q.Model, without locks and without sending anything.
type ContextFunc func(ctx context.Context, c auth.Caller, k history.Key, q ContextQuery) (*Context, error)

// Config configures a Handler. Zero fields take the documented defaults.
type Config struct {
	// Store keeps conversations (required): the same Store the chat path
	// uses, so that its cache sees every change.
	Store history.Store
	// Authenticate resolves the request's caller (required; auth.API
	// over the current tenants, for a server). An *apierr.Error it
	// returns is answered as is; any other error is a 500.
	Authenticate func(rc *fasthttp.RequestCtx) (auth.Caller, error)
	// Lock serialises a mutating call with chat requests on the same
	// conversation. Default: no locking (a single-writer embedder).
	Lock func(ctx context.Context, k history.Key) (release func(), err error)
	// Summarizer serves end and summarize. Default nil: they answer 501.
	Summarizer Summarizer
	// Context serves the context route. Default: plan.Make with no new
	// messages over Store, as the chat path makes it (PlanContext).
	Context ContextFunc
	// Counter counts the tokens of memorized messages. Default: a new one.
	Counter *tokens.Counter
	// MaxBodyBytes bounds a request body (memorize, forget, import).
	// Default 32 MiB.
	MaxBodyBytes int
	// Timeout bounds one call's store work. Default 30s.
	Timeout time.Duration
	// MaxHeavy bounds the heavy calls (search, export, import) running at
	// once, across tenants: more wait for a slot within HeavyTimeout, then
	// are refused with 429 and Retry-After. Default: one fewer than
	// GOMAXPROCS, at least 1, so that chat requests always have a core.
	MaxHeavy int
	// MaxHeavyPerTenant bounds one namespace's heavy calls in flight,
	// running or waiting: more are refused at once with 429 and
	// Retry-After. Default 2.
	MaxHeavyPerTenant int
	// HeavyTimeout bounds a heavy call, its wait for a slot included (an
	// export's stream, once started, is bounded by 10 × Timeout).
	// Default 10s.
	HeavyTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives failures. Default: discarded.
	Logger *slog.Logger
	// Observe, if set, is told of every answered call: the tenant id (""
	// before authentication), the route name and the status.
	Observe func(tenant, route string, status int)
	// OnServed, if set, is told of every answered call once it is
	// answered, with the conversation it named and when it began (a
	// trace's memory operations). It must not block.
	OnServed func(Served)
	// FlushExchanges, if set, waits until the exchange records handed to
	// the store's writer before it are stored, or ctx ends
	// (inspect.Writer.Flush): the exchanges calls call it before they
	// read, so that a record is listed as soon as its exchange answered.
	// Default: records are read as the store has them.
	FlushExchanges func(ctx context.Context) error
	// Calibration, if set, serves the calibration a conversation shows
	// (of its latest model) and corrects the context call's budget as
	// the chat path's (*calibrate.Calibrator). Default: none shown, no
	// correction.
	Calibration Calibration
}

// Served describes an answered call of the API.
type Served struct {
	// Tenant is the caller's tenant id ("" before authentication),
	// Route the route's name ("delete", "forget", ...), Status the
	// status answered.
	Tenant, Route string
	Status        int
	// Key is the conversation the call named (Conversation "": none).
	Key history.Key
	// Start is when the call began.
	Start time.Time
	// Found is how many hits a search answered.
	Found int
}

// Calibration serves what was learned of how an upstream counts a
// tenant's prompts for a model.
type Calibration interface {
	Get(tenant, model string) (history.Calibration, bool)
	Learned(tenant, model string) (ratio float64, window int)
}

// Handler serves the API.
type Handler struct {
	cfg   Config
	log   *slog.Logger
	heavy *gate
}

// EnterHeavy admits a heavy call of namespace ns made outside the API
// (the proxy's Conversations API item lists) under the same bounds as
// the API's own (MaxHeavy, MaxHeavyPerTenant): apierr.HeavyBusy when ns
// has its share in flight, or when no slot frees before ctx ends. The
// returned leave must be called exactly once.
func (h *Handler) EnterHeavy(ctx context.Context, ns string) (leave func(), err error) {
	return h.heavy.enter(ctx, ns)
}

// New returns a Handler for cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Authenticate == nil {
		return nil, errors.New("api: config needs Store and Authenticate")
	}
	if cfg.Lock == nil {
		cfg.Lock = func(context.Context, history.Key) (func(), error) { return func() {}, nil }
	}
	if cfg.Counter == nil {
		cfg.Counter = &tokens.Counter{}
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxHeavy <= 0 {
		cfg.MaxHeavy = max(runtime.GOMAXPROCS(0)-1, 1)
	}
	if cfg.MaxHeavyPerTenant <= 0 {
		cfg.MaxHeavyPerTenant = 2
	}
	if cfg.HeavyTimeout <= 0 {
		cfg.HeavyTimeout = 10 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Context == nil {
		cfg.Context = planContextFunc(cfg.Store, cfg.Counter, cfg.Now, cfg.Calibration)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg, log: cfg.Logger, heavy: newGate(cfg.MaxHeavy, cfg.MaxHeavyPerTenant)}, nil
}

// call is one API request being served.
type call struct {
	h      *Handler
	rc     *fasthttp.RequestCtx
	ctx    context.Context
	caller auth.Caller
	key    history.Key // Conversation is "" for tenant-wide routes
	xid    string      // the exchange record's id, on its route
	route  string
	allow  string // the path's methods, for the Allow header of a 405
	found  int    // a search's hits (Served.Found)
	// leave, for a heavy call, gives its slot back: serve calls it after
	// the handler unless the handler took it over (export's stream).
	leave func()
}

// route is one API route: a method, a path shape and its handler.
type route struct {
	method string
	name   string
	conv   bool   // the path names a conversation
	verb   string // the segment after the conversation id, "" for none
	serve  func(*call) error
	// heavy calls cost what the tenant stores, not one window: they run
	// under the gate, within HeavyTimeout.
	heavy bool
}

// routes are the API's routes, matched in order. Paths are relative to
// Prefix: "conversations", "conversations/{id}[/verb]", "search",
// "openapi.json".
var routes = []route{
	{method: "GET", name: "list", serve: (*call).list},
	{method: "GET", name: "show", conv: true, serve: (*call).show},
	{method: "DELETE", name: "delete", conv: true, serve: (*call).delete},
	{method: "GET", name: "messages", conv: true, verb: "messages", serve: (*call).messages},
	{method: "POST", name: "memorize", conv: true, verb: "messages", serve: (*call).memorize},
	{method: "GET", name: "context", conv: true, verb: "context", serve: (*call).context},
	{method: "GET", name: "search", conv: true, verb: "search", serve: (*call).search, heavy: true},
	{method: "POST", name: "forget", conv: true, verb: "forget", serve: (*call).forget},
	{method: "POST", name: "end", conv: true, verb: "end", serve: (*call).end},
	{method: "POST", name: "summarize", conv: true, verb: "summarize", serve: (*call).summarize},
	{method: "GET", name: "export", conv: true, verb: "export", serve: (*call).export, heavy: true},
	{method: "POST", name: "import", conv: true, verb: "import", serve: (*call).importConv, heavy: true},
	{method: "GET", name: "exchanges", conv: true, verb: "exchanges", serve: (*call).exchanges},
	{method: "GET", name: "exchange", conv: true, verb: "exchanges/{xid}", serve: (*call).exchange},
	{method: "GET", name: "threads", conv: true, verb: "threads", serve: (*call).threads},
}

// Handle serves one request whose path starts with Prefix.
func (h *Handler) Handle(rc *fasthttp.RequestCtx) {
	c := &call{h: h, rc: rc, route: "other"}
	var start time.Time
	if h.cfg.OnServed != nil {
		start = h.cfg.Now()
	}
	status, err := c.serve()
	if err != nil {
		e := c.classify(err)
		apierr.Write(rc, e, apierr.OpenAI)
		if e.Status == 429 {
			rc.Response.Header.Set("Retry-After", retryAfter)
		}
		if e.Status == fasthttp.StatusMethodNotAllowed && c.allow != "" {
			rc.Response.Header.Set(fasthttp.HeaderAllow, c.allow)
		}
		status = e.Status
	}
	if h.cfg.Observe != nil {
		tenant := ""
		if c.caller.Tenant != nil {
			tenant = c.caller.Tenant.ID
		}
		h.cfg.Observe(tenant, c.route, status)
	}
	if h.cfg.OnServed != nil {
		tenant := ""
		if c.caller.Tenant != nil {
			tenant = c.caller.Tenant.ID
		}
		h.cfg.OnServed(Served{Tenant: tenant, Route: c.route, Status: status, Key: c.key, Start: start, Found: c.found})
	}
}

func (c *call) serve() (int, error) {
	path, ok := bytes.CutPrefix(c.rc.Request.URI().PathOriginal(), []byte(Prefix))
	if !ok {
		return 0, apierr.NotFound
	}
	method := string(c.rc.Method())
	rest := string(path)
	if rest == "openapi.json" {
		c.route = "openapi"
		if method != "GET" && method != "HEAD" {
			c.allow = "GET, HEAD"
			return 0, apierr.MethodNotAllowed
		}
		return c.openapi()
	}
	var r *route
	conv, verb := false, "" // the path's shape
	switch {
	case rest == "conversations":
		r = match(method, conv, verb)
	case rest == "search":
		c.route = "search_tenant"
		if method != "GET" {
			c.allow = "GET"
			return 0, apierr.MethodNotAllowed
		}
		r = &route{name: "search_tenant", serve: (*call).searchTenant, heavy: true}
	case strings.HasPrefix(rest, "conversations/"):
		var id string
		var slash bool
		id, verb, slash = strings.Cut(rest[len("conversations/"):], "/")
		// One path per route: a trailing slash ("conversations/c1/") or a
		// deeper path is no alias of it. One record of the exchanges is
		// the one deeper path.
		if xid, ok := strings.CutPrefix(verb, "exchanges/"); ok && xid != "" && !strings.Contains(xid, "/") {
			c.xid, verb = xid, "exchanges/{xid}"
		}
		if slash && verb == "" || strings.Contains(verb, "/") && verb != "exchanges/{xid}" {
			return 0, apierr.NotFound
		}
		switch verb {
		case "", "messages", "context", "search", "forget", "end", "summarize", "export", "import", "exchanges", "exchanges/{xid}", "threads":
		default:
			return 0, apierr.NotFound
		}
		// The id as a client escapes it (the page's encodeURIComponent
		// writes run:7 as run%3A7); an escaped '/' decodes to what no id
		// holds.
		if u, err := url.PathUnescape(id); err == nil {
			id = u
		}
		if !history.ValidStoredID(id) { // a conversation, or one of its threads
			return 0, apierr.BadConversationID
		}
		c.key.Conversation, conv = id, true
		r = match(method, conv, verb)
	default:
		return 0, apierr.NotFound
	}
	if r == nil {
		c.allow = allowed(conv, verb)
		return 0, apierr.MethodNotAllowed
	}
	c.route = r.name
	caller, err := c.h.cfg.Authenticate(c.rc)
	if err != nil {
		return 0, err
	}
	c.caller, c.key.Tenant = caller, caller.Namespace
	timeout := c.h.cfg.Timeout
	if r.heavy {
		timeout = c.h.cfg.HeavyTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c.ctx = ctx
	if r.heavy {
		leave, err := c.h.heavy.enter(ctx, c.key.Tenant)
		if err != nil {
			return 0, err
		}
		c.leave = leave
		defer func() {
			if c.leave != nil {
				c.leave()
			}
		}()
	}
	if err := r.serve(c); err != nil {
		return 0, err
	}
	return c.rc.Response.StatusCode(), nil
}

// match finds the route for method on a path shape.
func match(method string, conv bool, verb string) *route {
	for i := range routes {
		r := &routes[i]
		if r.method == method && r.conv == conv && r.verb == verb {
			return r
		}
	}
	return nil
}

// allowed lists the methods of the routes of a path shape, for Allow.
func allowed(conv bool, verb string) string {
	var methods []string
	for i := range routes {
		if r := &routes[i]; r.conv == conv && r.verb == verb {
			methods = append(methods, r.method)
		}
	}
	return strings.Join(methods, ", ")
}

// body reads the request body, bounded by MaxBodyBytes.
func (c *call) body() ([]byte, error) {
	st := c.rc.RequestBodyStream()
	if st == nil {
		b := c.rc.Request.Body()
		if len(b) > c.h.cfg.MaxBodyBytes {
			return nil, apierr.TooLarge
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(st, int64(c.h.cfg.MaxBodyBytes)+1))
	if err != nil {
		return nil, apierr.BadBody
	}
	if len(b) > c.h.cfg.MaxBodyBytes {
		c.rc.SetConnectionClose()
		return nil, apierr.TooLarge
	}
	return b, nil
}

// now is the clock's time in Unix nanoseconds.
func (c *call) now() int64 { return c.h.cfg.Now().UnixNano() }

// lock takes the conversation's lock; the caller releases it.
func (c *call) lock() (func(), error) {
	release, err := c.h.cfg.Lock(c.ctx, c.key)
	if err != nil {
		return nil, apierr.Busy
	}
	return release, nil
}

// meta loads the conversation's metadata: apierr.ConversationNotFound if it was never
// written (or was deleted), in this caller's namespace.
func (c *call) meta() (history.Meta, error) {
	snap, err := c.h.cfg.Store.Load(c.ctx, c.key, history.Query{MinMessages: 1, MaxTurns: 1})
	if err != nil {
		return history.Meta{}, err
	}
	if snap.Meta.Version == 0 {
		return history.Meta{}, apierr.ConversationNotFound
	}
	return snap.Meta, nil
}
