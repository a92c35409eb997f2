package ui

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func serve(t *testing.T, h *Handler, method, path string, header map[string]string) *fasthttp.Response {
	t.Helper()
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(method)
	rc.Request.SetRequestURI(path)
	for k, v := range header {
		rc.Request.Header.Set(k, v)
	}
	h.Handle(&rc)
	var resp fasthttp.Response
	rc.Response.CopyTo(&resp)
	return &resp
}

func newHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Every answer, an asset or not, carries the security headers: a policy
// that allows this origin only and no inline code, no sniffing, no
// referrer.
func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	h := newHandler(t)
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"the page", "GET", "/recall/ui/", 200},
		{"a module", "GET", "/recall/ui/app.js", 200},
		{"the redirect", "GET", "/recall/ui", 301},
		{"a missing asset", "GET", "/recall/ui/nope.js", 404},
		{"a POST", "POST", "/recall/ui/", 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := serve(t, h, tt.method, tt.path, nil)
			if got := resp.StatusCode(); got != tt.status {
				t.Errorf("status: got %d, want %d", got, tt.status)
			}
			for k, want := range map[string]string{
				"X-Content-Type-Options": "nosniff",
				"Referrer-Policy":        "no-referrer",
			} {
				if got := string(resp.Header.Peek(k)); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
			policy := string(resp.Header.Peek("Content-Security-Policy"))
			if !strings.HasPrefix(policy, "default-src 'self';") {
				t.Errorf("Content-Security-Policy: got %q, want it to start with default-src 'self'", policy)
			}
			for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "data:", "http"} {
				if strings.Contains(policy, bad) {
					t.Errorf("Content-Security-Policy %q allows %s", policy, bad)
				}
			}
		})
	}
}

func TestAssetsAndTheirTypes(t *testing.T) {
	h := newHandler(t)
	tests := []struct {
		path, ctype, contains string
	}{
		{"/recall/ui/", "text/html; charset=utf-8", `<script type="module" src="app.js">`},
		{"/recall/ui/index.html", "text/html; charset=utf-8", `<main id="main"`},
		{"/recall/ui/app.css", "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"/recall/ui/exchanges.js", "text/javascript; charset=utf-8", "export async function exchangesView"},
		{"/recall/ui/icon.svg", "image/svg+xml", "<svg"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			resp := serve(t, h, "GET", tt.path, nil)
			if resp.StatusCode() != 200 {
				t.Fatalf("got %d, want 200", resp.StatusCode())
			}
			if got := string(resp.Header.ContentType()); got != tt.ctype {
				t.Errorf("Content-Type: got %q, want %q", got, tt.ctype)
			}
			if !strings.Contains(string(resp.Body()), tt.contains) {
				t.Errorf("body lacks %q", tt.contains)
			}
		})
	}
}

// Without its slash the page's relative links would resolve under
// /recall/: the bare path redirects.
func TestBarePathRedirectsToTheSlash(t *testing.T) {
	resp := serve(t, newHandler(t), "GET", "/recall/ui", nil)
	if resp.StatusCode() != 301 || string(resp.Header.Peek("Location")) != "/recall/ui/" {
		t.Errorf("got %d Location %q, want 301 /recall/ui/", resp.StatusCode(), resp.Header.Peek("Location"))
	}
}

// Names are matched as sent: an escape or a dot segment names no asset.
func TestOnlyEmbeddedNamesAreServed(t *testing.T) {
	h := newHandler(t)
	for _, p := range []string{"/recall/ui/../ui/app.js", "/recall/ui/%61pp.js", "/recall/ui/static/app.js", "/recall/ui//app.js", "/recall/ui/ui.go"} {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetRequestURI(p)
		h.Handle(&rc)
		if got := rc.Response.StatusCode(); got != 404 {
			t.Errorf("%s: got %d, want 404", p, got)
		}
	}
}

// Assets are revalidated by ETag: a matching If-None-Match is answered
// 304 without a body; a changed one gets the asset.
func TestETagRevalidation(t *testing.T) {
	h := newHandler(t)
	first := serve(t, h, "GET", "/recall/ui/app.js", nil)
	etag := string(first.Header.Peek("ETag"))
	if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag %q, want a strong tag", etag)
	}
	if got := string(first.Header.Peek("Cache-Control")); got != "no-cache" {
		t.Errorf("Cache-Control: got %q, want no-cache", got)
	}
	tests := []struct {
		name, inm string
		status    int
	}{
		{"same tag", etag, 304},
		{"weak form", "W/" + etag, 304},
		{"in a list", `"other", ` + etag, 304},
		{"any", "*", 304},
		{"another tag", `"other"`, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := serve(t, h, "GET", "/recall/ui/app.js", map[string]string{"If-None-Match": tt.inm})
			if resp.StatusCode() != tt.status {
				t.Fatalf("got %d, want %d", resp.StatusCode(), tt.status)
			}
			if tt.status == 304 && len(resp.Body()) != 0 {
				t.Errorf("304 with a %d-byte body", len(resp.Body()))
			}
			if got := string(resp.Header.Peek("ETag")); got != etag {
				t.Errorf("ETag: got %q, want %q", got, etag)
			}
		})
	}
	if other := serve(t, h, "GET", "/recall/ui/app.css", nil).Header.Peek("ETag"); string(other) == etag {
		t.Errorf("app.css and app.js share the ETag %s", etag)
	}
}

// The page fetches nothing from another origin and runs no inline code:
// every script and stylesheet is a relative file of its own.
func TestAssetsReferNoOtherOrigin(t *testing.T) {
	h := newHandler(t)
	for name, a := range h.files {
		// The SVG namespace is a name, not an address.
		body := strings.ReplaceAll(string(a.body), "http://www.w3.org/2000/svg", "")
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "outerHTML", "insertAdjacentHTML", "eval(", "style=", ".style."} {
			if strings.Contains(body, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
		if strings.HasSuffix(name, ".html") && (strings.Contains(body, "<script>") || strings.Contains(body, "<style")) {
			t.Errorf("%s has inline script or style", name)
		}
	}
}
