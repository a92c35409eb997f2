package proxy

import (
	"bytes"
	"context"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/respstate"
)

// The routes of the state Recall keeps for the Responses API (stored
// responses) and the Conversations API, on its own store (package
// respstate). They are answered there, never passed through: the upstream
// keeps no state.

var (
	prefixResponses     = []byte("/v1/responses/")
	pathConversations   = []byte("/v1/conversations")
	prefixConversations = []byte("/v1/conversations/")
)

// stateRoute reports whether Recall serves path (below any /c/{id}
// prefix) with method itself: GET and DELETE /v1/responses/{id}, GET
// /v1/responses/{id}/input_items, and every method on /v1/conversations
// and below (a method a path does not take is 405, not a pass-through).
// POST /v1/responses/compact is Recall's too (compact.go); other POSTs
// below /v1/responses/ (input_tokens, cancel) pass through.
func stateRoute(method, path []byte) bool {
	switch {
	case bytes.Equal(path, pathConversations) || bytes.HasPrefix(path, prefixConversations):
		return true
	case bytes.HasPrefix(path, prefixResponses):
		return string(method) == fasthttp.MethodGet || string(method) == fasthttp.MethodDelete
	}
	return false
}

// serveState serves a state route (see stateRoute) through Config.State:
// it reads the body and authenticates the caller first. Every answer is
// in OpenAI's shape.
func (s *Server) serveState(rc *fasthttp.RequestCtx, path []byte) {
	route, start := "conversations", s.cfg.Now()
	if bytes.HasPrefix(path, prefixResponses) {
		route = "responses"
	}
	tenant := ""
	body, err := s.readBody(rc)
	var c caller
	if err != nil {
		rc.SetConnectionClose()
	} else if c, err = s.authenticate(rc); err == nil {
		tenant = c.cfg.ID
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout())
		defer cancel()
		h := &c.cfg.History
		err = s.state.Serve(ctx, rc, respstate.Caller{Namespace: c.Namespace,
			StoredToolResultChars: h.StoredToolResultChars, Encoding: h.Encoding}, path, body)
	}
	if err != nil {
		s.fail(rc, route, tenant, err, start)
		if classify(err).Status == fasthttp.StatusMethodNotAllowed {
			rc.Response.Header.Set(fasthttp.HeaderAllow, respstate.Allow(path))
		}
		return
	}
	status := rc.Response.StatusCode()
	s.metrics.CountRequest(tenant, route, status)
	s.log.Info("request", "route", route, "tenant", tenant, "status", status,
		"overhead_ms", ms(s.cfg.Now().Sub(start)))
}
