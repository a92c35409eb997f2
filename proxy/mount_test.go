package proxy_test

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
)

// The proxy builds no conversation API and no web page: it serves the
// handler it is given for paths under /recall/v1/ (the API), and for
// /recall/ui and the paths under /recall/ui/ (the page); without one
// those paths are unknown.
func TestHandlersAreMountedNotBuilt(t *testing.T) {
	mounted := func(rc *fasthttp.RequestCtx) { rc.SetStatusCode(299) }
	api := func(c *proxy.Config, h fasthttp.RequestHandler) { c.API = h }
	ui := func(c *proxy.Config, h fasthttp.RequestHandler) { c.UI = h }
	tests := []struct {
		name  string
		mount func(*proxy.Config, fasthttp.RequestHandler)
		h     fasthttp.RequestHandler
		path  string
		want  int
	}{
		{"api mounted", api, mounted, "/recall/v1/conversations", 299},
		{"api mounted, any route below", api, mounted, "/recall/v1/anything/else", 299},
		{"api mounted, not another version", api, mounted, "/recall/v2/conversations", 404},
		{"api none", api, nil, "/recall/v1/conversations", 404},
		{"ui the page", ui, mounted, "/recall/ui/", 299},
		{"ui an asset", ui, mounted, "/recall/ui/app.js", 299},
		{"ui without the slash", ui, mounted, "/recall/ui", 299},
		{"ui not a longer name", ui, mounted, "/recall/uix", 404},
		{"ui not the API", ui, mounted, "/recall/v1/conversations", 404},
		{"ui none", ui, nil, "/recall/ui/", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, config.DefaultGlobal(), func(c *proxy.Config) { tt.mount(c, tt.h) })
			var rc fasthttp.RequestCtx
			rc.Request.SetRequestURI(tt.path)
			// With a key: a 404 is the path's, not a missing key's.
			rc.Request.Header.Set("Authorization", "Bearer sk-test")
			srv.Handle(&rc)
			if got := rc.Response.StatusCode(); got != tt.want {
				t.Errorf("got %d %s, want %d", got, rc.Response.Body(), tt.want)
			}
		})
	}
}
