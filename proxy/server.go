package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/convlock"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/stackgrow"
	"github.com/recallproxy/recall/metrics"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/tracing"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
	"github.com/recallproxy/recall/wsmode"
)

// Tenants supplies the current tenant set; config.Watcher implements it.
type Tenants interface {
	Current() *config.Set
}

// StaticTenants is a fixed tenant set, for embedders and tests that do
// not reload configuration.
type StaticTenants struct{ Set *config.Set }

// Current returns the set.
func (t StaticTenants) Current() *config.Set { return t.Set }

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Tenants supplies the tenants (required).
	Tenants Tenants
	// Store keeps conversations (required).
	Store history.Store
	// Logger receives one line per request and every failure. Default: discarded.
	Logger *slog.Logger
	// Metrics records Prometheus metrics. Default: a private registry.
	Metrics *metrics.Metrics
	// Counter counts tokens. Default: a new Counter.
	Counter *tokens.Counter
	// MaxBodyBytes bounds a chat-completions request body. Default 32 MiB.
	MaxBodyBytes int
	// MaxResponseBytes bounds an upstream answer Recall reads for its record
	// (a non-streamed body, decoded or not, or a recorded stream's data): an
	// answer past it is a 502 upstream_response_too_large (an error event
	// for a stream). Default 64 MiB.
	MaxResponseBytes int
	// StreamIdleTimeout ends an upstream stream that sends nothing for this
	// long. Default 2m.
	StreamIdleTimeout time.Duration
	// StreamHeaderHold is how long a streamed answer's headers wait for
	// its first event, to go to the client in one write with it; past it
	// they go alone, unless the answer is whole and only its commit is
	// left: then they go with it. Default 2ms.
	StreamHeaderHold time.Duration
	// holdTimer, if set, stands for the timer of StreamHeaderHold: a
	// test's clock (export_test.go).
	holdTimer func(time.Duration) <-chan time.Time
	// Client sends requests upstream. Default: uplink.DefaultClient(). A client
	// given here must stream response bodies (StreamResponseBody).
	Client *fasthttp.Client
	// BufferingClient sends the requests that record nothing and ask for
	// no stream: it reads an answer whole, which costs less than
	// streaming it (its own connections to the upstream). Default:
	// uplink.BufferingClient(MaxResponseBytes) if Client is defaulted too,
	// Client otherwise.
	BufferingClient *fasthttp.Client
	// CommitTimeout bounds one commit of a turn: past it the commit counts
	// as failed, the client is told so, and the conversation is released.
	// Default 10s.
	CommitTimeout time.Duration
	// CanCommit, if set, is asked before a recorded request is sent
	// upstream; an error refuses the request with 507
	// insufficient_storage (the store is out of room, or read-only) and
	// makes /readyz report not ready.
	CanCommit func() error
	// Leaser, if set, serialises the Responses and Conversations state's
	// changes on a conversation across processes sharing the store
	// (replicas) with the exchanges on it, which hold its lease from
	// their plan's read to their commit through the Store itself
	// (history.ExchangeLease). Default: the Store, if it is a
	// history.Leaser.
	Leaser history.Leaser
	// Ping, if set, checks that the store answers: /readyz reports not
	// ready (503) while it fails.
	Ping func(context.Context) error
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// OnExchangeDone, if set, is called exactly once for every
	// chat-completions request, whatever its end: refused, failed, or
	// answered and committed (or not). For a stream that is after the
	// handler returned, from the relay goroutine. It must not block.
	OnExchangeDone func(ExchangeDone)
	// OnExchange, if set, gets the exchange record (package inspect) of
	// every upstream call made for a conversation whose memory is on,
	// once, when the exchange ends (before OnExchangeDone), keyed by the
	// conversation's store key. It must not block. Default: no records.
	OnExchange func(history.Key, history.ExchangeRecord)
	// Summaries, if set, is asked for a compaction after a commit that
	// calls for one (summary.Manager implements it). Default: none, no
	// conversation is ever summarised.
	Summaries Summarizer
	// API, if set, serves every request whose path starts with
	// /recall/v1/: the conversation API (package api), built by the
	// wiring. Default: those paths are 404.
	API fasthttp.RequestHandler
	// UI, if set, serves /recall/ui and every path under /recall/ui/:
	// the inspector's web page (package ui), built by the wiring.
	// Default: those paths are 404.
	UI fasthttp.RequestHandler
	// Calibration, if set, corrects each exchange's budget by the ratio
	// it serves for the tenant and model, and learns from every answered
	// exchange that reported usage (package calibrate). Default: no
	// correction.
	Calibration Calibrator
	// Tracer, if set, makes a span of every exchange (package tracing):
	// it continues the client's traceparent, and the exchange's upstream
	// requests carry one naming the exchange's span. Default nil: no
	// spans, and no tracer work on the request path.
	Tracer *tracing.Tracer
	// WebSocketLifetime is how long a Responses WebSocket lives: past it
	// the socket ends, once its turn in flight is answered, with the
	// error websocket_connection_limit_reached, and the client opens
	// another. Default 60m, as OpenAI's.
	WebSocketLifetime time.Duration
	// State serves the state Recall keeps for the Responses and
	// Conversations APIs (package respstate): GET and DELETE
	// /v1/responses/{id}, GET /v1/responses/{id}/input_items, and
	// /v1/conversations and below, after the server read the body and
	// authenticated the caller; and the stored responses that Responses
	// requests chain on. Built by the wiring over the same Store, Locks
	// and Leaser. Default: one over this Config's Store, Locks, Leaser,
	// Now, Counter and Logger, with no heavy-call limiter.
	State *respstate.State
	// Locks serialises the work on each conversation. Default: the
	// server's own. Give the same Locks to whatever else changes
	// conversations in this process (the API, retention) so that it waits
	// for chat requests, and they for it.
	Locks *convlock.Table
	// Fleet, if set, names the replica that owns each conversation among
	// those sharing the store (package fleet): a request to a memory
	// route (chat completions, Responses, Messages, Gemini) whose
	// conversation another replica owns is forwarded there as it came,
	// and its answer relayed; if that replica cannot be reached it is
	// served here. The conversation API, WebSocket mode, count_tokens,
	// compact and pass-through are served here. Default nil: every
	// request is served here.
	Fleet Fleet
	// PeerClient sends the requests forwarded to other replicas (Fleet).
	// Default: uplink.PeerClient(), when Fleet is set.
	PeerClient *fasthttp.Client
}

// Summarizer queues summary jobs; summary.Manager implements it.
type Summarizer interface {
	// Trigger queues a compaction of key for tenant (an id) and returns at
	// once. model is the request's model; cred its credential for a
	// pass-through upstream, held in memory only; force says the budget
	// could not send every unsummarised turn.
	Trigger(tenant string, key history.Key, model, cred string, force bool)
}

// Calibrator serves and learns the ratio of an upstream's input token
// count to Recall's estimate, and the model's input window as the
// upstream stated it; *calibrate.Calibrator implements it. Learned and
// Observe run on every recorded exchange: they must be cheap.
type Calibrator interface {
	Learned(tenant, model string) (ratio float64, window int)
	Observe(tenant, model string, estimated, reported int) bool
	LearnWindow(tenant, model string, window int) bool
}

// ExchangeDone describes a finished chat-completions exchange.
type ExchangeDone struct {
	Tenant, Conversation string
	// Forwarded is the base URL of the replica the request was forwarded
	// to (Config.Fleet), which served it: nothing was recorded here. ""
	// for a request served here.
	Forwarded string
	// Status is the status the client got (499: it left mid-stream).
	Status int
	// Committed reports whether the turn was recorded.
	Committed bool
	// Err is why the exchange ended early or was not recorded, if it was.
	Err error
}

// readyzPingTimeout bounds /readyz's check of the store.
const readyzPingTimeout = 2 * time.Second

// Server is the Recall HTTP server.
type Server struct {
	cfg      Config
	deps     pipeline.Deps // what the pipeline's stages need of the server
	log      *slog.Logger
	metrics  *metrics.Metrics
	counter  *tokens.Counter
	client   *fasthttp.Client
	buffered *fasthttp.Client // cfg.BufferingClient
	srv      *fasthttp.Server
	inflight sync.WaitGroup // stream relays still running
	busy     atomic.Int64   // handlers running plus stream relays running
	conns    connTracker
	closing  atomic.Bool
	tenants  tenantCache
	// fixed counts instructions, tools and the summary, which repeat on
	// every request of a conversation, once per content.
	fixed *tokens.Cache
	// memoryWarned is when memoryNone last logged (Unix nanoseconds).
	memoryWarned atomic.Int64
	// peers is cfg.PeerClient; hopWarned when a hop that fell back last
	// logged a warning (Unix nanoseconds).
	peers     *fasthttp.Client
	hopWarned atomic.Int64
	sockets   *wsmode.Server // the Responses WebSockets, and those open
	state     *respstate.State
	// realClock: cfg.Now is time.Now, and a request's start can be
	// fasthttp's reading of it (startOf).
	realClock bool
	// goroutines runs the commits' and the stream relays' goroutines,
	// kept between requests with their stacks grown (Shutdown ends them).
	goroutines stackgrow.Pool
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Tenants == nil || cfg.Store == nil {
		return nil, errors.New("proxy: config needs Tenants and Store")
	}
	realClock := cfg.Now == nil
	cfg.setDefaults()
	if cfg.State == nil {
		st, err := respstate.New(respstate.Config{Store: cfg.Store, Lock: cfg.Locks.Acquire, Leaser: cfg.Leaser,
			Now: cfg.Now, Counter: cfg.Counter, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		cfg.State = st
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		metrics:  cfg.Metrics,
		counter:  cfg.Counter,
		fixed:    tokens.NewCache(cfg.Counter, 0),
		client:   cfg.Client, // Do follows no redirect: they are the client's business
		buffered: cfg.BufferingClient,
		peers:    cfg.PeerClient,
		state:    cfg.State,

		realClock: realClock,
	}
	s.deps = pipeline.Deps{Store: cfg.Store, Lock: cfg.Locks.Acquire, Log: cfg.Logger, Now: cfg.Now, CommitTimeout: cfg.CommitTimeout, Metrics: cfg.Metrics,
		Goroutines: &s.goroutines}
	sockets, err := s.newSockets()
	if err != nil {
		return nil, err
	}
	s.sockets = sockets
	s.metrics.ActiveConversations(cfg.Locks.Active)
	if cfg.Tracer != nil {
		s.metrics.TraceSpans(cfg.Tracer)
	}
	s.srv = s.newHTTPServer()
	return s, nil
}

// setDefaults fills in every field of c left zero that has a default
// (each field's comment names it), State excepted: making one can fail.
func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New(nil)
	}
	if c.Counter == nil {
		c.Counter = &tokens.Counter{}
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 32 << 20
	}
	if l, ok := c.Store.(history.Leaser); ok && c.Leaser == nil {
		c.Leaser = l
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 64 << 20
	}
	if c.StreamIdleTimeout <= 0 {
		c.StreamIdleTimeout = 2 * time.Minute
	}
	if c.StreamHeaderHold <= 0 {
		c.StreamHeaderHold = 2 * time.Millisecond
	}
	if c.BufferingClient == nil {
		c.BufferingClient = c.Client
		if c.Client == nil {
			c.BufferingClient = uplink.BufferingClient(c.MaxResponseBytes)
		}
	}
	if c.Client == nil {
		c.Client = uplink.DefaultClient()
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = 10 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Locks == nil {
		c.Locks = &convlock.Table{}
	}
	if c.WebSocketLifetime <= 0 {
		c.WebSocketLifetime = wsmode.DefaultLifetime
	}
	if c.Fleet != nil && c.PeerClient == nil {
		c.PeerClient = uplink.PeerClient()
	}
}

// newHTTPServer is the fasthttp server that serves s.Handle.
func (s *Server) newHTTPServer() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       s.Handle,
		Name:                          "recall",
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: false,
		StreamRequestBody:             true,
		// Pass-through uploads are relayed byte for byte: fasthttp must
		// not parse a multipart body (and re-encode it, or spill it to
		// temporary files) before the handler sees it.
		DisablePreParseMultipartForm: true,
		MaxRequestBodySize:           s.cfg.MaxBodyBytes,
		// One timeout for reading a request and for the silence before
		// the next (no IdleTimeout): a connection busy with requests
		// then asks for one deadline, which coarseListener's connections
		// pass on about once a second (sock.Coarse).
		ReadTimeout:     5 * time.Minute,
		ReadBufferSize:  16 << 10,
		CloseOnShutdown: true,
		ExpectHandler:   s.expect,
		ConnState:       s.conns.track,
		Logger:          fasthttpLogger{s.log},
		ErrorHandler: func(rc *fasthttp.RequestCtx, err error) {
			if errors.Is(err, fasthttp.ErrBodyTooLarge) {
				writeError(rc, apierr.TooLarge)
				return
			}
			writeError(rc, apierr.MalformedHTTP)
		},
	}
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(coarseListener{ln}) }

// Shutdown stops accepting connections, closes idle ones, and waits for
// in-flight requests and streams to finish until ctx ends; then it closes
// whatever is left and returns ctx's error. A Responses WebSocket closes
// (with an error event server_shutting_down) once its turn in flight, if
// any, is answered. It does not close the store.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	defer s.goroutines.Close()
	s.sockets.Drain() // each closes once its turn in flight is answered
	stopped := make(chan error, 1)
	go func() { stopped <- s.srv.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		if s.busy.Load() == 0 {
			// No request is being served: whatever connection is left is
			// between requests, whatever state fasthttp last reported.
			s.conns.closeAll()
		} else {
			s.conns.closeIdle()
		}
		select {
		case err = <-stopped:
			break wait
		case <-tick.C:
		case <-ctx.Done():
			s.conns.closeAll()
			s.sockets.CloseAll()
			<-stopped
			return ctx.Err()
		}
	}
	// The sockets first: a WebSocket turn still in flight starts its
	// relay (inflight.Add) after the listener has stopped, and a
	// WaitGroup's Add must not race its Wait. Once every socket is closed
	// no relay can start.
	select {
	case <-s.sockets.Wait():
	case <-ctx.Done():
		s.conns.closeAll()
		s.sockets.CloseAll()
		return ctx.Err()
	}
	relays := make(chan struct{})
	go func() { s.inflight.Wait(); close(relays) }()
	select {
	case <-relays:
	case <-ctx.Done():
		s.conns.closeAll()
		return ctx.Err()
	}
	s.client.CloseIdleConnections() // the upstream's side of them ends too
	s.buffered.CloseIdleConnections()
	if s.peers != nil {
		s.peers.CloseIdleConnections()
	}
	return err
}

var (
	pathHealthz  = []byte("/healthz")
	pathReadyz   = []byte("/readyz")
	pathMetrics  = []byte("/metrics")
	pathChat     = []byte("/v1/chat/completions")
	prefixV1     = []byte("/v1/")
	prefixConv   = []byte("/c/")
	prefixRecall = []byte("/recall/")
	prefixAPI    = []byte("/recall/v1/") // api.Prefix
	pathUI       = []byte("/recall/ui")  // ui.Prefix without its slash, which ui redirects
)

// Handle routes one request. It is the fasthttp.RequestHandler of the
// server, exported so tests and embedders can serve it themselves.
//
// It routes on the path as the client sent it (see routePath), which is
// also the path a pass-through request is forwarded with.
func (s *Server) Handle(rc *fasthttp.RequestCtx) {
	s.busy.Add(1)
	defer s.busy.Add(-1)
	switch {
	case badFraming(&rc.Request.Header):
		s.reject(rc, "other", apierr.BadFraming)
		return
	case isWebSocket(&rc.Request.Header):
		s.upgrade(rc)
		return
	}
	raw := rc.Request.URI().PathOriginal()
	switch {
	case bytes.Equal(raw, pathHealthz):
		rc.SetContentType("application/json")
		rc.SetBodyString(`{"status":"ok"}`)
		return
	case bytes.Equal(raw, pathReadyz):
		s.readyz(rc)
		return
	case bytes.Equal(raw, pathMetrics):
		s.metrics.Serve(rc)
		return
	case bytes.HasPrefix(raw, prefixAPI) && s.cfg.API != nil:
		s.cfg.API(rc)
		return
	case bytes.HasPrefix(raw, pathUI) && (len(raw) == len(pathUI) || raw[len(pathUI)] == '/') && s.cfg.UI != nil:
		s.cfg.UI(rc)
		return
	case bytes.IndexByte(rc.Request.Header.RequestURI(), '#') >= 0:
		// A fragment is not part of a request target: there is nothing
		// faithful to forward.
		s.reject(rc, "other", apierr.BadPath)
		return
	}

	conv, path, e := routePath(raw)
	switch {
	case e == apierr.BadConversationID:
		s.reject(rc, "chat", e)
	case e != nil:
		s.reject(rc, "other", e)
	case bytes.Equal(path, pathChat) && rc.IsPost():
		s.serve(rc, conv, protocols[wire.ChatCompletions], path, false)
	case bytes.Equal(path, pathChat) && conv != "":
		// Stored chat completions (GET /v1/chat/completions) have no
		// conversation memory to apply: they pass through, but not under a
		// conversation prefix, which would say otherwise.
		s.reject(rc, "chat", apierr.MethodNotAllowed)
		rc.Response.Header.Set(fasthttp.HeaderAllow, fasthttp.MethodPost)
	case rc.IsPost() && bytes.Equal(path, pathCountTokens):
		s.countTokens(rc, conv)
	case rc.IsPost() && bytes.Equal(path, pathCompact):
		s.compact(rc, conv)
	case rc.IsPost() && seamRoute(path) != nil:
		s.serve(rc, conv, seamRoute(path), path, false)
	case stateRoute(rc.Method(), path):
		// The Responses and Conversations APIs' state is Recall's: never
		// passed through (the /c/{id} prefix names nothing here).
		s.serveState(rc, path)
	case bytes.HasPrefix(path, prefixV1):
		s.passthrough(rc, conv, path)
	default:
		s.reject(rc, "other", apierr.NotFound)
	}
}

// readyz answers /readyz: 200 while the server takes requests and can
// commit them, 503 saying why not (shutting down, no space, the store
// does not answer within readyzPingTimeout).
func (s *Server) readyz(rc *fasthttp.RequestCtx) {
	rc.SetContentType("application/json")
	if s.closing.Load() {
		rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
		rc.SetBodyString(`{"status":"shutting down"}`)
		return
	}
	if s.cfg.CanCommit != nil {
		if err := s.cfg.CanCommit(); err != nil {
			rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
			rc.SetBodyString(`{"status":"insufficient storage"}`)
			return
		}
	}
	if s.cfg.Ping != nil {
		ctx, cancel := context.WithTimeout(context.Background(), readyzPingTimeout)
		err := s.cfg.Ping(ctx)
		cancel()
		if err != nil {
			rc.SetStatusCode(fasthttp.StatusServiceUnavailable)
			rc.SetBodyString(`{"status":"store unavailable"}`)
			return
		}
	}
	rc.SetBodyString(`{"status":"ready"}`)
}

// reject answers e and counts it. The request's body was not read, so the
// connection is closed after the answer (and must be, for a request whose
// framing is in doubt).
func (s *Server) reject(rc *fasthttp.RequestCtx, route string, e *apierr.Error) {
	rc.SetConnectionClose()
	writeError(rc, e)
	s.metrics.CountRequest("", route, e.Status)
}

// expect answers a request's "Expect: 100-continue" before its body is
// read. A chat-completions body declared larger than MaxBodyBytes is
// refused with 413 at once, so that the client need not send it, nor
// Recall read it; anything else continues. (Pass-through bodies have no
// bound.) fasthttp then closes the connection, which the client may have
// started to send the body on.
//
// fasthttp asks an ExpectHandler not to modify the response; this one
// writes the error body anyway, because a client deserves OpenAI's error
// shape, and fasthttp sends it unchanged (the handler is not called).
// TestExpectContinueRefusesAnOversizedChatBodyUnread checks that it does.
func (s *Server) expect(rc *fasthttp.RequestCtx) int {
	if rc.Request.Header.ContentLength() <= s.cfg.MaxBodyBytes {
		return fasthttp.StatusContinue
	}
	if _, path, e := routePath(rc.Request.URI().PathOriginal()); e != nil || !bytes.Equal(path, pathChat) {
		return fasthttp.StatusContinue
	}
	writeError(rc, apierr.TooLarge)
	s.metrics.CountRequest("", "chat", apierr.TooLarge.Status)
	return apierr.TooLarge.Status
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
}

// startOf is when rc's request began: the clock reading fasthttp took as
// its headers were read (one clock read fewer a request), unless the
// server runs on a clock of its own or rc did not come through fasthttp's
// server.
func (s *Server) startOf(rc *fasthttp.RequestCtx) time.Time {
	if t := rc.Time(); s.realClock && !t.IsZero() {
		return t
	}
	return s.cfg.Now()
}

// now is the time during x: on the real clock, x's start plus the
// monotonic time since it, one clock read where time.Now takes two (the
// wall clock's and the monotonic one's; a plain request reads the clock
// about ten times, fasthttp's readings included, at about 25 ns a read on
// the benchmark machine).
func (x *exchange) now() time.Time {
	if x.s.realClock && !x.rec.Start.IsZero() {
		return x.rec.Start.Add(time.Since(x.rec.Start)) // Since reads only the monotonic clock when start has it
	}
	return x.s.cfg.Now()
}
