package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
)

// tenant is what the pipeline needs of a config.Tenant, built once per
// tenant per configuration generation.
type tenant struct {
	cfg        *config.Tenant
	baseURL    string // without a trailing slash, ends in the API version ("/v1")
	convHeader string
	mode       history.Mode
	strategy   history.Strategy
	lowWater   float64
	plan       plan.Policy
}

// tenantCache maps the configuration's tenants to their runtime form. A new
// configuration generation (hot reload) starts a new cache.
type tenantCache struct {
	mu  sync.RWMutex
	set *config.Set
	m   map[*config.Tenant]*tenant
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
		c.set, c.m = set, make(map[*config.Tenant]*tenant)
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
	return &tenant{
		cfg:        t,
		baseURL:    strings.TrimRight(t.Upstream.BaseURL, "/"),
		convHeader: t.History.ConversationHeader,
		mode:       pol.Mode,
		strategy:   pol.Strategy,
		lowWater:   t.History.LowWater,
		plan:       pol,
	}, nil
}

// caller is an authenticated request's tenant and namespace.
type caller struct {
	*tenant
	namespace string // history.Key.Tenant
	bearer    string // the client's credential, for pass-through upstreams
}

var bearerPrefix = []byte("Bearer ")

// authenticate resolves the request's tenant from its bearer key. In
// pass-through mode the namespace is a hash of the credential, so two keys
// never see each other's conversations. A request without a bearer key
// gets OpenAI's "You didn't provide an API key" answer, a key no tenant
// has the "Incorrect API key provided" one.
func (s *Server) authenticate(rc *fasthttp.RequestCtx) (caller, error) {
	auth := rc.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(auth) > len(bearerPrefix) && bytes.EqualFold(auth[:len(bearerPrefix)], bearerPrefix) {
		auth = auth[len(bearerPrefix):]
	} else {
		auth = nil
	}
	bearer := string(bytes.TrimSpace(auth))
	if bearer == "" {
		return caller{}, apierr.NoAPIKey
	}
	set := s.cfg.Tenants.Current()
	t, ok := set.Authenticate(bearer)
	if !ok {
		return caller{}, apierr.InvalidAPIKey
	}
	rt, err := s.tenants.get(set, t)
	if err != nil {
		return caller{}, fmt.Errorf("proxy: tenant %s: %w", t.ID, err)
	}
	c := caller{tenant: rt, namespace: t.ID, bearer: bearer}
	if t.PassThrough {
		c.namespace = PassThroughNamespace(t.ID, bearer)
	}
	return c, nil
}

// PassThroughNamespace is the history namespace (history.Key.Tenant) of a
// credential presented to a pass-through tenant: the tenant id, ".pt.",
// then a hash of the credential, so two keys never share conversations
// and the key itself is never stored.
func PassThroughNamespace(tenantID, bearer string) string {
	sum := sha256.Sum256([]byte(bearer))
	return PassThroughPrefix(tenantID) + hex.EncodeToString(sum[:16])
}

// PassThroughPrefix starts every PassThroughNamespace of a tenant.
func PassThroughPrefix(tenantID string) string { return tenantID + ".pt." }

// policy returns the tenant's plan policy with the request's merge mode.
func (t *tenant) policy(mode history.Mode) plan.Policy {
	p := t.plan
	p.Mode = mode
	return p
}
