// Package auth resolves who a request is: the tenant its key belongs to,
// the namespace its conversations live in (history.Key.Tenant), and the
// key that goes upstream on its behalf. Every surface, the chat proxy and
// the conversation API alike, resolves its callers here.
//
// A client presents its key as OpenAI's SDKs send it, "Authorization:
// Bearer <key>", or in the header of a protocol whose API reads its key
// from one of its own (wire.KeyHeaders): as Anthropic's SDKs do,
// "x-api-key: <key>", or Google's Gemini SDKs, "x-goog-api-key: <key>".
// The admin key is accepted by the conversation API only, and acts on
// the tenant the X-Recall-Tenant header names.
package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// HeaderTenant names the tenant the admin key acts on.
const HeaderTenant = "X-Recall-Tenant"

// The names Key reads, as fasthttp's server normalizes a request's header
// names: read as they are (PeekCanonical), not normalized again a
// request. keyHeaders are the registered protocols' (wire.KeyHeaders),
// read at the first request, after every package's init has registered
// its protocol.
var (
	keyAuthorization = []byte(fasthttp.HeaderAuthorization)
	keyHeaders       = sync.OnceValue(func() [][]byte {
		var names [][]byte
		for _, h := range wire.KeyHeaders() {
			names = append(names, fasthttp.AppendNormalizedHeaderKey(nil, h))
		}
		return names
	})
)

// Caller is an authenticated request's tenant, namespace and key.
type Caller struct {
	Tenant *config.Tenant
	// Namespace is where the caller's conversations live
	// (history.Key.Tenant): the tenant's id, or for a pass-through tenant
	// a hash of the key (Namespace).
	Namespace string
	// Key is the key the client presented; "" for the admin key acting
	// on a tenant, which never goes upstream.
	Key string
}

// UpstreamKey is the key Recall sends upstream for c, as "Authorization:
// Bearer": the one config.Upstream.Credential picks, the tenant's api_key
// or, in pass-through, the client's own. "" means none is sent.
func (c Caller) UpstreamKey() string { return c.Tenant.Upstream.Credential(c.Key) }

// PassedKey is the client's key if it is what goes upstream (a
// pass-through tenant), "" otherwise: what work done later on the
// caller's behalf (a summary) must hold, in memory only.
func (c Caller) PassedKey() string {
	if c.Tenant.Upstream.PassesClientKey() {
		return c.Key
	}
	return ""
}

var bearerPrefix = []byte("Bearer ")

// Key returns the key a request presents, trimmed of spaces: the
// Authorization header's bearer token, or else the value of the first of
// the registered protocols' key headers (wire.KeyHeaders, in their wire
// order: Messages' x-api-key before Gemini's x-goog-api-key) that has
// one; nil for none. It points into h and must not outlive it. h's names
// are as fasthttp's server normalizes them.
func Key(h *fasthttp.RequestHeader) []byte {
	auth := h.PeekCanonical(keyAuthorization)
	if len(auth) > len(bearerPrefix) && bytes.EqualFold(auth[:len(bearerPrefix)], bearerPrefix) {
		if k := bytes.TrimSpace(auth[len(bearerPrefix):]); len(k) > 0 {
			return k
		}
	}
	for _, name := range keyHeaders() {
		if k := bytes.TrimSpace(h.PeekCanonical(name)); len(k) > 0 {
			return k
		}
	}
	return nil
}

// Tenant resolves a tenant's key. In pass-through mode the namespace is a
// hash of the key, so two keys never see each other's conversations. No
// key gets apierr.NoAPIKey (OpenAI's "You didn't provide an API key"), a
// key no tenant has apierr.InvalidAPIKey.
func Tenant(set *config.Set, key []byte) (Caller, error) {
	if len(key) == 0 {
		return Caller{}, apierr.NoAPIKey
	}
	k := string(key)
	t, ok := set.Authenticate(k)
	if !ok {
		return Caller{}, apierr.InvalidAPIKey
	}
	c := Caller{Tenant: t, Namespace: t.ID, Key: k}
	if t.PassThrough {
		c.Namespace = Namespace(t.ID, k)
	}
	return c, nil
}

// API resolves a conversation API request: a tenant's key as Tenant
// does, or the admin key, which acts on the tenant X-Recall-Tenant names
// (a tenant id, or a pass-through namespace).
func API(set *config.Set, h *fasthttp.RequestHeader) (Caller, error) {
	key := Key(h)
	if len(key) > 0 && set.Admin(string(key)) {
		return Admin(set, string(h.Peek(HeaderTenant)))
	}
	return Tenant(set, key)
}

// Admin is the caller the admin key acts as on the tenant name names: a
// tenant id, or a pass-through key's namespace.
func Admin(set *config.Set, name string) (Caller, error) {
	if name == "" {
		return Caller{}, apierr.NoTenant
	}
	if t, ok := set.Tenant(name); ok {
		return Caller{Tenant: t, Namespace: t.ID}, nil
	}
	id, hash, ok := strings.Cut(name, passThroughSep)
	if t, known := set.Tenant(id); ok && known && t.PassThrough && len(hash) == 32 && isLowerHex(hash) {
		return Caller{Tenant: t, Namespace: name}, nil
	}
	return Caller{}, apierr.UnknownTenant
}

const passThroughSep = ".pt."

// Namespace is the history namespace of a key presented to a
// pass-through tenant: the tenant id, ".pt.", then a hash of the key, so
// two keys never share conversations and the key itself is never stored.
func Namespace(tenantID, key string) string {
	sum := sha256.Sum256([]byte(key))
	return NamespacePrefix(tenantID) + hex.EncodeToString(sum[:16])
}

// NamespacePrefix starts every Namespace of a tenant.
func NamespacePrefix(tenantID string) string { return tenantID + passThroughSep }

func isLowerHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}
