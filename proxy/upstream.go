package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// hopHeaders are not forwarded in either direction (RFC 9110 section 7.6.1),
// with the framing headers each side sets itself.
var hopHeaders = map[string]bool{
	"Connection":          true,
	"Proxy-Connection":    true,
	"Keep-Alive":          true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	"Content-Length":      true,
	"Host":                true,
}

// newUpstreamRequest builds the upstream request for a client request:
// same method, path below the API version and query, byte for byte as the
// client sent them, the client's headers minus hop-by-hop, Recall's own
// and the credential, then the tenant's credential and extra headers.
// path is the raw path routePath returned, starting with "/v1/": being
// forwardable, net/url keeps it as it is (URL.RawPath).
func newUpstreamRequest(ctx context.Context, rc *fasthttp.RequestCtx, c caller, path []byte, body io.Reader, size int64) (*http.Request, error) {
	url := c.baseURL + string(path[len("/v1"):])
	if q := rc.URI().QueryString(); len(q) > 0 {
		url += "?" + string(q)
	}
	req, err := http.NewRequestWithContext(ctx, string(rc.Method()), url, body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = size
	// The headers the client's Connection header names are hop-by-hop too
	// (RFC 9110 section 7.6.1). Read them first: a header may come before
	// the Connection header that names it.
	var named []string
	forwarded := 0
	for k, v := range rc.Request.Header.All() {
		if bytes.EqualFold(k, headerConnection) {
			named = append(named, string(v))
		}
		forwarded++
	}
	// One backing array for every value: a header costs its name and
	// value strings, not a slice of its own as well (net/http's Add).
	values := make([]string, 0, forwarded)
	for k, v := range rc.Request.Header.All() {
		if !forwardRequestHeader(k, c.convHeader) {
			continue
		}
		name, ok := commonHeaders[string(k)] // no copy: a lookup by bytes
		if !ok {
			name = http.CanonicalHeaderKey(string(k)) // fasthttp has normalised it: one copy
		}
		if len(named) > 0 && connectionNames(named, name) {
			continue
		}
		values = append(values, string(v))
		if prev := req.Header[name]; prev != nil {
			req.Header[name] = append(prev, values[len(values)-1]) // repeated: rare
		} else {
			req.Header[name] = values[len(values)-1 : len(values) : len(values)]
		}
	}
	key := c.cfg.Upstream.APIKey.Reveal()
	if key == "" {
		key = c.bearer
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range c.cfg.Upstream.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// copyResponseHeader copies the upstream's status and headers (request ids,
// rate limits, content type and encoding) to the client response, but for
// hop-by-hop headers: those of hopHeaders and those the upstream's
// Connection header names.
func copyResponseHeader(rc *fasthttp.RequestCtx, resp *http.Response) {
	rc.SetStatusCode(resp.StatusCode)
	named := resp.Header["Connection"]
	for name, vs := range resp.Header {
		if hopHeaders[name] || connectionNames(named, name) {
			continue
		}
		for _, v := range vs {
			rc.Response.Header.Add(name, v)
		}
	}
}

var headerConnection = []byte(fasthttp.HeaderConnection)

// forwardRequestHeader reports whether a client's request header goes
// upstream: not a hop-by-hop one, not the client's credential (the
// tenant's replaces it), not the conversation header nor Recall's own
// X-Recall-* headers. It reads the name in place, allocation free.
func forwardRequestHeader(name []byte, convHeader string) bool {
	for _, h := range hopHeaderList {
		if bytes.EqualFold(name, h) {
			return false
		}
	}
	return !bytes.EqualFold(name, headerAuthorization) &&
		!(len(name) == len(convHeader) && strings.EqualFold(string(name), convHeader)) &&
		!(len(name) >= len(recallHeaderPrefix) && bytes.EqualFold(name[:len(recallHeaderPrefix)], recallHeaderPrefix))
}

// commonHeaders holds, in fasthttp's normalised form, the names the
// official SDKs send on every request, so that forwarding them costs no
// copy of the name.
var commonHeaders = func() map[string]string {
	m := map[string]string{}
	for _, h := range []string{"Accept", "Accept-Encoding", "Content-Type", "User-Agent", "Openai-Organization",
		"Openai-Project", "Openai-Beta", "Idempotency-Key", "X-Stainless-Lang", "X-Stainless-Package-Version", "X-Stainless-Os",
		"X-Stainless-Arch", "X-Stainless-Runtime", "X-Stainless-Runtime-Version", "X-Stainless-Retry-Count",
		"X-Stainless-Read-Timeout", "X-Stainless-Timeout", "X-Stainless-Async", "X-Stainless-Helper-Method"} {
		m[h] = h
	}
	return m
}()

var (
	hopHeaderList = func() (l [][]byte) {
		for h := range hopHeaders {
			l = append(l, []byte(h))
		}
		return l
	}()
	headerAuthorization = []byte(fasthttp.HeaderAuthorization)
	recallHeaderPrefix  = []byte("X-Recall-")
)

// connectionNames reports whether the values of a Connection header list
// name among their comma-separated options, as Caddy's and httputil's
// removeConnectionHeaders read them.
func connectionNames(values []string, name string) bool {
	for _, v := range values {
		for v != "" {
			var option string
			option, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(textproto.TrimString(option), name) {
				return true
			}
		}
	}
	return false
}

// timeout returns the tenant's bound on a whole upstream exchange.
func (c caller) timeout() time.Duration { return time.Duration(c.cfg.Upstream.Timeout) }
