package proxy_test

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
)

// The proxy builds no web page: it serves the handler it is given for
// /recall/ui and the paths under /recall/ui/, and without one those paths
// are unknown.
func TestUIIsMountedNotBuilt(t *testing.T) {
	set, err := config.LoadTenants(config.DefaultGlobal(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	store, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	mounted := func(rc *fasthttp.RequestCtx) { rc.SetStatusCode(299) }
	tests := []struct {
		name string
		ui   fasthttp.RequestHandler
		path string
		want int
	}{
		{"the page", mounted, "/recall/ui/", 299},
		{"an asset", mounted, "/recall/ui/app.js", 299},
		{"without the slash", mounted, "/recall/ui", 299},
		{"not a longer name", mounted, "/recall/uix", 404},
		{"not the API", mounted, "/recall/v1/conversations", 404},
		{"none", nil, "/recall/ui/", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: store, UI: tt.ui})
			if err != nil {
				t.Fatal(err)
			}
			var rc fasthttp.RequestCtx
			rc.Request.SetRequestURI(tt.path)
			srv.Handle(&rc)
			if got := rc.Response.StatusCode(); got != tt.want {
				t.Errorf("got %d %s, want %d", got, rc.Response.Body(), tt.want)
			}
		})
	}
}
