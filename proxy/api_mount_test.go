package proxy_test

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
)

// The proxy builds no conversation API: it serves the handler it is given
// for paths under /recall/v1/, and without one those paths are unknown.
func TestAPIIsMountedNotBuilt(t *testing.T) {
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
		api  fasthttp.RequestHandler
		path string
		want int
	}{
		{"mounted", mounted, "/recall/v1/conversations", 299},
		{"mounted, any route below", mounted, "/recall/v1/anything/else", 299},
		{"mounted, not another version", mounted, "/recall/v2/conversations", 404},
		{"none", nil, "/recall/v1/conversations", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: store, API: tt.api})
			if err != nil {
				t.Fatal(err)
			}
			var rc fasthttp.RequestCtx
			rc.Request.SetRequestURI(tt.path)
			rc.Request.Header.Set("Authorization", "Bearer sk-test")
			srv.Handle(&rc)
			if got := rc.Response.StatusCode(); got != tt.want {
				t.Errorf("got %d %s, want %d", got, rc.Response.Body(), tt.want)
			}
		})
	}
}
