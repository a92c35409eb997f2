package proxy

import (
	"bytes"
	"context"
	"encoding/hex"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/summary"
)

// headerTenant names the tenant the admin key acts on.
const headerTenant = "X-Recall-Tenant"

// newAPI builds the conversation API over the server's store, locks and
// authentication.
func (s *Server) newAPI() (*api.Handler, error) {
	cfg := api.Config{
		Store:        s.cfg.Store,
		Authenticate: s.apiCaller,
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
		Context: s.apiContext,
	}
	if m, ok := s.cfg.Summaries.(*summary.Manager); ok {
		cfg.Summarizer = apiSummaries{m}
	}
	if s.cfg.API != nil {
		s.cfg.API(&cfg)
	}
	return api.New(cfg)
}

// apiCaller authenticates an API request as a chat request is, and also
// accepts the admin key, which acts on the tenant X-Recall-Tenant names.
func (s *Server) apiCaller(rc *fasthttp.RequestCtx) (api.Caller, error) {
	set := s.cfg.Tenants.Current()
	auth := rc.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(auth) > len(bearerPrefix) && bytes.EqualFold(auth[:len(bearerPrefix)], bearerPrefix) {
		if bearer := string(bytes.TrimSpace(auth[len(bearerPrefix):])); set.Admin(bearer) {
			return adminCaller(set, string(rc.Request.Header.Peek(headerTenant)))
		}
	}
	c, err := s.authenticate(rc)
	if err != nil {
		return api.Caller{}, classify(err)
	}
	return api.Caller{Tenant: c.cfg, Namespace: c.namespace}, nil
}

// adminCaller is the caller the admin key acts as: the tenant named, or a
// pass-through credential's namespace.
func adminCaller(set *config.Set, name string) (api.Caller, error) {
	if name == "" {
		return api.Caller{}, apierr.NoTenant
	}
	if t, ok := set.Tenant(name); ok {
		return api.Caller{Tenant: t, Namespace: t.ID}, nil
	}
	id, hash, ok := strings.Cut(name, ".pt.")
	if t, known := set.Tenant(id); ok && known && t.PassThrough && len(hash) == 32 && isLowerHex(hash) {
		return api.Caller{Tenant: t, Namespace: name}, nil
	}
	return api.Caller{}, apierr.UnknownTenant
}

func isLowerHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// Lock takes the per-conversation lock chat requests take, for
// background work that changes a conversation (retention): the returned
// release must be called exactly once.
func (s *Server) Lock(ctx context.Context, k history.Key) (release func(), err error) {
	return s.locks.acquire(ctx, k)
}
