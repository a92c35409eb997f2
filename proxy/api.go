package proxy

import (
	"context"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
)

// newAPI builds the conversation API over the server's store, locks and
// authentication.
func (s *Server) newAPI() (*api.Handler, error) {
	cfg := api.Config{
		Store: s.cfg.Store,
		Authenticate: func(rc *fasthttp.RequestCtx) (auth.Caller, error) {
			return auth.API(s.cfg.Tenants.Current(), &rc.Request.Header)
		},
		Lock: func(ctx context.Context, k history.Key) (func(), error) {
			return s.locks.acquire(ctx, k)
		},
		Counter:      s.counter,
		MaxBodyBytes: s.cfg.MaxBodyBytes,
		Now:          s.cfg.Now,
		Logger:       s.log,
		Observe: func(tenant, route string, status int) {
			s.metrics.request(tenant, "api_"+route, status)
		},
	}
	if m, ok := s.cfg.Summaries.(api.Summarizer); ok {
		cfg.Summarizer = m
	}
	if s.cfg.API != nil {
		s.cfg.API(&cfg)
	}
	return api.New(cfg)
}

// Lock takes the per-conversation lock chat requests take, for
// background work that changes a conversation (retention): the returned
// release must be called exactly once.
func (s *Server) Lock(ctx context.Context, k history.Key) (release func(), err error) {
	return s.locks.acquire(ctx, k)
}
