// Package wsmode serves the Responses API's WebSocket mode (DESIGN.md
// section 15): a socket upgraded from GET /v1/responses, on which each
// response.create message is served as the streamed POST /v1/responses
// it stands for, by a handler the mounting server gives (Config.Turn), on
// a request made for it from the upgrade request's headers and the
// message; the events that handler streams go back one message each. One
// response is in flight at a time; the socket keeps its last response to
// continue one the server did not store, as OpenAI's connection-local
// cache does.
//
// The package knows nothing of the server that mounts it: routing a
// request here, admitting its caller and serving a turn are the
// server's; the socket, its turns, their events and the set of sockets
// open (drained and closed at shutdown) are this package's.
package wsmode

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
)

// DefaultLifetime is how long a socket lives, as OpenAI's do.
const DefaultLifetime = 60 * time.Minute

// Config is what a Server needs from the server that mounts it. Turn is
// required; every other field has a default.
type Config struct {
	// Turn serves rc, a POST /v1/responses made for one response.create
	// (the upgrade request's headers, the message's body, streamed), on
	// conv, the upgrade path's conversation ("" if none), exactly as the
	// HTTP route would: its answer is a streamed body of Server-Sent
	// Events (rc.Response.BodyStream, a fasthttp.ReadCloserWithError,
	// closed by the Server once read), or a buffered error in OpenAI's
	// shape. rc.Conn() reports Gone() once
	// the socket's peer left. Turn must not keep rc after it returns.
	Turn func(rc *fasthttp.RequestCtx, conv string)
	// Authenticate admits a warmup turn's caller (a response.create with
	// generate: false, which Turn never sees). Default: every caller.
	Authenticate func(rc *fasthttp.RequestCtx) error
	// Classify maps an error (from Authenticate, or a message refused)
	// to the catalogue entry a client is told. Default: the
	// *apierr.Error in err's chain, else apierr.Internal.
	Classify func(error) *apierr.Error
	// Reject renders a refused handshake's error on rc. Default: in
	// OpenAI's shape (apierr.OpenAI).
	Reject func(rc *fasthttp.RequestCtx, e *apierr.Error)
	// Now is the clock (a warmup response's created_at). Default
	// time.Now.
	Now func() time.Time
	// MaxBodyBytes bounds a message, and a turn's body once continued.
	// Default 32 MiB.
	MaxBodyBytes int
	// MaxResponseBytes bounds one event a turn streams. Default 64 MiB.
	MaxResponseBytes int
	// StreamIdleTimeout bounds one message's write: a client that takes
	// nothing for that long is gone. Default 2m.
	StreamIdleTimeout time.Duration
	// Lifetime is how long a socket lives: past it the socket ends, once
	// its turn in flight is answered, with the error
	// websocket_connection_limit_reached. Default DefaultLifetime.
	Lifetime time.Duration
	// Logger gets fasthttp's messages about a turn's request. Default:
	// none.
	Logger *slog.Logger
}

// Server upgrades requests into sockets and keeps the set of those open.
type Server struct {
	cfg      Config
	upgrader *websocket.FastHTTPUpgrader
	sockets  *set
}

// New returns a Server for cfg, its defaults filled in.
func New(cfg Config) (*Server, error) {
	if cfg.Turn == nil {
		return nil, errors.New("wsmode: config needs Turn")
	}
	if cfg.Authenticate == nil {
		cfg.Authenticate = func(*fasthttp.RequestCtx) error { return nil }
	}
	if cfg.Classify == nil {
		cfg.Classify = func(err error) *apierr.Error {
			if ae, ok := errors.AsType[*apierr.Error](err); ok {
				return ae
			}
			return apierr.Internal
		}
	}
	if cfg.Reject == nil {
		cfg.Reject = func(rc *fasthttp.RequestCtx, e *apierr.Error) { apierr.Write(rc, e, apierr.OpenAI) }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 20
	}
	if cfg.StreamIdleTimeout <= 0 {
		cfg.StreamIdleTimeout = 2 * time.Minute
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = DefaultLifetime
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Server{cfg: cfg, sockets: newSet()}
	// The library's checks (GET, the version, the key, a same-origin
	// Origin if there is one), its refusals in the server's error shape,
	// and no compression (the events are small and compressing each
	// costs more than it saves on a loopback or a LAN).
	w.upgrader = &websocket.FastHTTPUpgrader{
		Error: func(rc *fasthttp.RequestCtx, status int, reason error) {
			rc.SetConnectionClose()
			cfg.Reject(rc, &apierr.Error{Status: status, Type: "invalid_request_error", Code: "invalid_websocket_handshake",
				Message: "The WebSocket handshake was refused: " + reason.Error() + "."})
		},
	}
	return w, nil
}

// upgradeHeaders are the upgrade request's headers that name the
// WebSocket handshake: a turn's request is a plain POST, and none of them
// goes upstream.
var upgradeHeaders = []string{
	fasthttp.HeaderConnection, fasthttp.HeaderUpgrade, "Sec-WebSocket-Key", "Sec-WebSocket-Version",
	"Sec-WebSocket-Extensions", "Sec-WebSocket-Protocol",
}

// Upgrade upgrades rc, a WebSocket upgrade of GET /v1/responses whose
// caller the mounting server admitted, into a socket of Responses turns
// on conv, the path's conversation ("" if none). An error is a refused
// handshake, already answered on rc (Config.Reject). The socket is
// served once the handler returns, on the connection fasthttp hands over.
func (w *Server) Upgrade(rc *fasthttp.RequestCtx, conv string) error {
	k := &socket{w: w, conv: conv, gone: make(chan struct{})}
	rc.Request.Header.CopyTo(&k.header)
	for _, h := range upgradeHeaders {
		k.header.Del(h)
	}
	if err := w.upgrader.Upgrade(rc, k.serve); err != nil {
		return fmt.Errorf("wsmode: upgrade: %w", err)
	}
	return nil
}

// Drain asks every socket to close, with the error event
// server_shutting_down, once its turn in flight, if any, is answered,
// and refuses new ones.
func (w *Server) Drain() { w.sockets.drain() }

// Wait returns a channel closed once every socket has closed.
func (w *Server) Wait() <-chan struct{} { return w.sockets.wait() }

// CloseAll ends every socket now: its reads and writes fail at once.
func (w *Server) CloseAll() { w.sockets.closeAll() }
