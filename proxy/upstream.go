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
	for k, v := range rc.Request.Header.All() {
		if bytes.EqualFold(k, headerConnection) {
			named = append(named, string(v))
		}
	}
	convHeader := strings.ToLower(c.convHeader)
	for k, v := range rc.Request.Header.All() {
		name := http.CanonicalHeaderKey(string(k))
		lower := strings.ToLower(name)
		if hopHeaders[name] || name == "Authorization" || lower == convHeader || strings.HasPrefix(lower, "x-recall-") ||
			connectionNames(named, name) {
			continue
		}
		req.Header.Add(name, string(v))
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
