package proxy

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/metrics"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/uplink"
)

// tenant is what the pipeline needs of a config.Tenant, built once per
// tenant per configuration generation.
type tenant struct {
	cfg     *config.Tenant
	baseURL string // without a trailing slash, ends in the API version ("/v1")
	// convHeader names the conversation header as fasthttp's server
	// normalizes a request's header names, which are read as they are.
	convHeader string
	convKey    []byte // convHeader's bytes
	mode       history.Mode
	strategy   history.Strategy
	lowWater   float64
	plan       plan.Policy
	series     metrics.TenantSeries // its exchanges' metrics
}

// tenantCache maps the configuration's tenants to their runtime form. A new
// configuration generation (hot reload) starts a new cache.
type tenantCache struct {
	mu  sync.RWMutex
	set *config.Set
	m   map[*config.Tenant]*tenant
	// passed maps the keys of a pass-through tenant's clients to their
	// callers: the namespace is a SHA-256 of the key, which every request
	// would otherwise compute. Only pass-through callers are kept: a
	// tenant's own keys are checked by digest in constant time, which a
	// lookup by key would undo; a pass-through tenant accepts any key, so
	// a lookup reveals nothing a guess could not.
	passed map[string]auth.Caller
}

// maxPassedCallers bounds tenantCache.passed; past it the map starts over.
const maxPassedCallers = 1024

// caller returns the cached caller for a pass-through key, if there is one
// for set.
func (c *tenantCache) caller(set *config.Set, key []byte) (auth.Caller, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.set != set {
		return auth.Caller{}, false
	}
	who, ok := c.passed[string(key)]
	return who, ok
}

// keep caches who, a pass-through caller authenticated under set.
func (c *tenantCache) keep(set *config.Set, who auth.Caller) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set != set {
		c.set, c.m, c.passed = set, make(map[*config.Tenant]*tenant), nil
	}
	if c.passed == nil || len(c.passed) >= maxPassedCallers {
		c.passed = make(map[string]auth.Caller)
	}
	c.passed[who.Key] = who
}

func (c *tenantCache) get(set *config.Set, t *config.Tenant) (*tenant, error) {
	c.mu.RLock()
	if c.set == set {
		if rt := c.m[t]; rt != nil {
			c.mu.RUnlock()
			return rt, nil
		}
	}
	c.mu.RUnlock()

	rt, err := newTenant(t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.set != set {
		c.set, c.m, c.passed = set, make(map[*config.Tenant]*tenant), nil
	}
	c.m[t] = rt
	c.mu.Unlock()
	return rt, nil
}

func newTenant(t *config.Tenant) (*tenant, error) {
	pol, err := plan.PolicyFor(t)
	if err != nil {
		return nil, err
	}
	convKey := fasthttp.AppendNormalizedHeaderKey(nil, t.History.ConversationHeader)
	return &tenant{
		cfg:        t,
		baseURL:    strings.TrimRight(t.Upstream.BaseURL, "/"),
		convHeader: string(convKey),
		convKey:    convKey,
		mode:       pol.Mode,
		strategy:   pol.Strategy,
		lowWater:   t.History.LowWater,
		plan:       pol,
	}, nil
}

// caller is an authenticated request's runtime tenant, with who it is.
type caller struct {
	*tenant
	auth.Caller
}

// authenticate resolves the request's caller from its key (package auth)
// and the tenant's runtime form from the cache.
func (s *Server) authenticate(rc *fasthttp.RequestCtx) (caller, error) {
	set := s.cfg.Tenants.Current()
	key := auth.Key(&rc.Request.Header)
	who, ok := s.tenants.caller(set, key)
	if !ok {
		var err error
		if who, err = auth.Tenant(set, key); err != nil {
			return caller{}, err
		}
		if who.Tenant.PassThrough {
			s.tenants.keep(set, who)
		}
	}
	rt, err := s.tenants.get(set, who.Tenant)
	if err != nil {
		return caller{}, fmt.Errorf("proxy: tenant %s: %w", who.Tenant.ID, err)
	}
	return caller{tenant: rt, Caller: who}, nil
}

// policy returns the tenant's plan policy with the request's merge mode.
func (t *tenant) policy(mode history.Mode) plan.Policy {
	p := t.plan
	p.Mode = mode
	return p
}

// timeout returns the tenant's bound on a whole upstream exchange.
func (c caller) timeout() time.Duration { return time.Duration(c.cfg.Upstream.Timeout) }

// upstreamRequest fills req with the upstream request for the client's
// request rc (see uplink.SetRequest): to the tenant's upstream, with the
// one credential config.Upstream.Credential picks for c. path is the raw
// path routePath returned, starting with "/v1/".
func upstreamRequest(req *fasthttp.Request, rc *fasthttp.RequestCtx, c caller, path []byte, bodyless bool) {
	t := uplink.Target{BaseURL: c.baseURL, ConvHeader: c.convHeader, Key: c.UpstreamKey(), Headers: c.cfg.Upstream.Headers}
	uplink.SetRequest(req, rc, &t, path, bodyless)
}
