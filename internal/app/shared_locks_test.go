package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// newApp assembles Recall in pass-through mode over Badger, with the
// API's calls bounded to 200ms.
func newApp(t *testing.T) *app.App {
	t.Helper()
	set, err := config.LoadTenants(config.DefaultGlobal(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	store := badgertest.Open(t)
	a, err := app.New(app.Config{
		Proxy: proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: store},
		API:   func(c *api.Config) { c.Timeout = 200 * time.Millisecond },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func serve(a *app.App, method, path, body string) (int, string) {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(method)
	rc.Request.SetRequestURI(path)
	rc.Request.Header.Set("Authorization", "Bearer sk-test")
	if body != "" {
		rc.Request.Header.SetContentType("application/json")
		rc.Request.SetBodyString(body)
	}
	a.Server.Handle(&rc)
	return rc.Response.StatusCode(), string(rc.Response.Body())
}

// The API waits on the lock chat requests (and retention, through
// Server.Lock) take: one lock table for the process.
func TestAPIAndChatShareLocks(t *testing.T) {
	a := newApp(t)
	k := history.Key{Tenant: auth.Namespace(config.DefaultTenantID, "sk-test"), Conversation: "c1"}
	release, err := a.Server.Lock(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	memorize := `{"messages":[{"role":"user","content":"hi"}]}`
	if status, body := serve(a, "POST", "/recall/v1/conversations/c1/messages", memorize); status != 409 || !strings.Contains(body, `"conversation_busy"`) {
		t.Errorf("while held: got %d %s, want 409 conversation_busy", status, body)
	}
	release()
	if status, body := serve(a, "POST", "/recall/v1/conversations/c1/messages", memorize); status != 201 {
		t.Errorf("once released: got %d %s, want 201", status, body)
	}
}

// The API's calls are counted on the server's /metrics.
func TestAPICallsAreCountedOnTheServersMetrics(t *testing.T) {
	a := newApp(t)
	if status, body := serve(a, "GET", "/recall/v1/conversations", ""); status != 200 {
		t.Fatalf("list: got %d %s, want 200", status, body)
	}
	_, metrics := serve(a, "GET", "/metrics", "")
	if want := `recall_requests_total{route="api_list",status="200",tenant="default"} 1`; !strings.Contains(metrics, want) {
		t.Errorf("metrics lack %s:\n%s", want, metrics)
	}
}
