package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
	"github.com/recallproxy/recall/wsmode"
)

// The Responses API's WebSocket mode is package wsmode's (DESIGN.md
// section 15); the server decides which upgrade is one, admits its
// caller, and serves each of its turns as the streamed POST
// /v1/responses it stands for, with serve.

var pathResponses = []byte("/v1/responses")

// upgrade serves a WebSocket upgrade: of GET /v1/responses, for an
// authenticated caller, into a socket of Responses turns; any other is
// answered 426, so that a client that tries WebSocket first falls back to
// HTTP at once.
func (s *Server) upgrade(rc *fasthttp.RequestCtx) {
	conv, path, e := routePath(rc.Request.URI().PathOriginal())
	switch {
	case e != nil || !rc.IsGet() || !bytes.Equal(path, pathResponses):
		s.reject(rc, "other", apierr.WebSocket)
		return
	case s.closing.Load():
		s.reject(rc, "responses", apierr.ShuttingDown)
		return
	}
	c, err := s.authenticate(rc)
	if err != nil {
		s.reject(rc, "responses", classify(err))
		return
	}
	if err := s.sockets.Upgrade(rc, conv); err != nil {
		s.metrics.CountRequest(c.cfg.ID, "responses", rc.Response.StatusCode())
		return
	}
	s.metrics.CountRequest(c.cfg.ID, "responses", fasthttp.StatusSwitchingProtocols)
}

// newSockets is the server's WebSocket mode: each turn served by
// serve as a POST /v1/responses, counted busy as a handler is, and
// served here whoever owns its conversation (Config.Fleet): the socket
// is this replica's.
func (s *Server) newSockets() (*wsmode.Server, error) {
	return wsmode.New(wsmode.Config{
		Turn: func(rc *fasthttp.RequestCtx, conv string) {
			s.busy.Add(1)
			defer s.busy.Add(-1)
			s.serve(rc, conv, protocols[wire.Responses], nil, true)
		},
		Authenticate: func(rc *fasthttp.RequestCtx) error {
			_, err := s.authenticate(rc)
			return err
		},
		Classify:          classify,
		Reject:            writeError,
		Now:               s.cfg.Now,
		MaxBodyBytes:      s.cfg.MaxBodyBytes,
		MaxResponseBytes:  s.cfg.MaxResponseBytes,
		StreamIdleTimeout: s.cfg.StreamIdleTimeout,
		Lifetime:          s.cfg.WebSocketLifetime,
		Logger:            s.log,
	})
}

// goner is a connection that knows whether its peer left: a WebSocket
// turn's (wsmode), whose socket's reader sees the peer leave.
type goner interface{ Gone() bool }
