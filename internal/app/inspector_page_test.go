package app_test

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// The server serves the inspector's page, under its security policy.
func TestServerServesTheInspectorPage(t *testing.T) {
	a := newApp(t)
	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/recall/ui/")
	a.Server.Handle(&rc)
	if got := rc.Response.StatusCode(); got != 200 || !strings.Contains(string(rc.Response.Body()), "Recall inspector") {
		t.Errorf("got %d %.80s, want 200 and the page", got, rc.Response.Body())
	}
	if got := string(rc.Response.Header.Peek("Content-Security-Policy")); !strings.HasPrefix(got, "default-src 'self'") {
		t.Errorf("Content-Security-Policy: got %q, want default-src 'self'…", got)
	}
}
