// Package ui serves Recall's inspector: a web page, embedded in the
// binary, that shows a tenant's conversations, their summaries and
// messages, and what each exchange sent upstream and why (DESIGN.md §13).
//
// The page is plain HTML, CSS and JavaScript modules written by hand: no
// framework, no build step, nothing fetched from another origin. It
// reads everything through the conversation API under /recall/v1/, with
// the key the user signs in with, which it keeps in the tab's session
// storage only. The assets themselves are public: they hold no data.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"

	"github.com/valyala/fasthttp"
)

// Prefix is the path the page is served under. A GET of Prefix without
// its trailing slash redirects to it, so that the page's relative links
// resolve under it.
const Prefix = "/recall/ui/"

//go:embed static
var static embed.FS

// Security headers on every answer. The policy allows scripts, styles,
// images and requests from Recall's own origin only, and neither inline
// script nor inline style: the page builds its DOM with textContent,
// never from markup, so stored message text cannot run as code.
const (
	csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	// cacheControl lets a browser keep an asset but revalidate it (by
	// ETag) on every use: the names carry no version, and a new binary
	// must not run next to an old page.
	cacheControl = "no-cache"
)

// Handler serves the embedded page. Its zero value serves nothing; make
// one with New.
type Handler struct {
	files map[string]asset // by name below Prefix; "" is index.html
}

type asset struct {
	body  []byte
	ctype string
	etag  string // strong: a hash of body
}

// New loads the embedded assets and computes their ETags.
func New() (*Handler, error) {
	h := &Handler{files: map[string]asset{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("no content type for %s", p)
		}
		sum := sha256.Sum256(body)
		h.files[p[len("static/"):]] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: load assets: %w", err)
	}
	index, ok := h.files["index.html"]
	if !ok {
		return nil, fmt.Errorf("ui: load assets: no index.html")
	}
	h.files[""] = index
	return h, nil
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handle serves one request whose path is Prefix without its slash, or
// starts with Prefix. Only GET and HEAD are served; a name that is not an
// asset is 404. The path is matched as sent, never decoded, so no escape
// reaches outside the embedded files.
func (h *Handler) Handle(rc *fasthttp.RequestCtx) {
	hd := &rc.Response.Header
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if !rc.IsGet() && !rc.IsHead() {
		hd.Set(fasthttp.HeaderAllow, "GET, HEAD")
		plain(rc, fasthttp.StatusMethodNotAllowed, "method not allowed")
		return
	}
	raw := rc.URI().PathOriginal()
	name, ok := bytes.CutPrefix(raw, []byte(Prefix))
	if !ok {
		if string(raw) == Prefix[:len(Prefix)-1] {
			hd.Set(fasthttp.HeaderLocation, Prefix)
			plain(rc, fasthttp.StatusMovedPermanently, "moved to "+Prefix)
			return
		}
		plain(rc, fasthttp.StatusNotFound, "not found")
		return
	}
	a, ok := h.files[string(name)]
	if !ok {
		plain(rc, fasthttp.StatusNotFound, "not found")
		return
	}
	hd.Set(fasthttp.HeaderCacheControl, cacheControl)
	hd.Set(fasthttp.HeaderETag, a.etag)
	if matches(rc.Request.Header.Peek(fasthttp.HeaderIfNoneMatch), a.etag) {
		rc.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	hd.SetContentType(a.ctype)
	rc.SetBody(a.body)
}

// plain answers a short text body with status.
func plain(rc *fasthttp.RequestCtx, status int, msg string) {
	rc.SetStatusCode(status)
	rc.Response.Header.SetContentType("text/plain; charset=utf-8")
	rc.SetBodyString(msg)
}

// matches reports whether an If-None-Match header value names etag: "*",
// or a list of tags, weak or strong (RFC 9110 compares them weakly for
// If-None-Match).
func matches(header []byte, etag string) bool {
	for len(header) > 0 {
		var tag []byte
		tag, header, _ = bytes.Cut(header, []byte(","))
		tag = bytes.TrimSpace(tag)
		tag = bytes.TrimPrefix(tag, []byte("W/"))
		if string(tag) == "*" || string(tag) == etag {
			return true
		}
	}
	return false
}
