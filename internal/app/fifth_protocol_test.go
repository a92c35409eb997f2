package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/app"
	"github.com/recallproxy/recall/internal/fifth"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/wire"
)

// A protocol added as a package (here package fifth, linked by this test
// only) is served by what reads the registered protocols, with no edit
// to wire, config, auth or summary: its kind of upstream is a valid
// upstream.protocol that sends every request in it, a client's key in
// its key header is accepted, and the summariser sends its request
// through its Upstream: its path, its key header, its body, its answer.
func TestFifthProtocolNeedsNoEditElsewhere(t *testing.T) {
	type request struct {
		path, key, bearer string
		body              []byte
	}
	requests := make(chan request, 8)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests <- request{r.URL.Path, r.Header.Get(fifth.KeyHeaderName), r.Header.Get("Authorization"), body}
		io.WriteString(w, `{"reply":"Ada likes tea.","used":{"in":30,"out":5}}`)
	}))
	defer up.Close()

	t.Run("config", func(t *testing.T) {
		if got, ok := wire.UpstreamFor(fifth.Kind, wire.ChatCompletions); !ok || got != fifth.Protocol {
			t.Errorf("UpstreamFor(%q, chat): got %v, %v; want %v, true", fifth.Kind, got, ok, fifth.Protocol)
		}
		if want := []string{"openai", "chat", "anthropic", "gemini", fifth.Kind}; !slices.Equal(wire.UpstreamKinds, want) {
			t.Errorf("UpstreamKinds: got %v, want %v", wire.UpstreamKinds, want)
		}
		g := config.DefaultGlobal()
		env := map[string]string{config.EnvUpstreamProtocol: fifth.Kind}
		if err := g.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
			t.Errorf("%s=%s: got %v, want no error", config.EnvUpstreamProtocol, fifth.Kind, err)
		}
	})
	set := fifthTenant(t, up.URL+"/v1")

	t.Run("auth", func(t *testing.T) {
		var h fasthttp.RequestHeader
		h.Set(fifth.KeyHeaderName, "rk-acme")
		if got := string(auth.Key(&h)); got != "rk-acme" {
			t.Errorf("key in %s: got %q, want rk-acme", fifth.KeyHeaderName, got)
		}
		h.Set("Authorization", "Bearer rk-other")
		if got := string(auth.Key(&h)); got != "rk-other" {
			t.Errorf("bearer and %s: got %q, want the bearer's, rk-other", fifth.KeyHeaderName, got)
		}
	})

	store := badgertest.Open(t)
	a, err := app.New(app.Config{
		Proxy:   proxy.Config{Tenants: proxy.StaticTenants{Set: set}, Store: store},
		Summary: &summary.Config{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Summaries.Close() })

	t.Run("auth through the app", func(t *testing.T) {
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("GET")
		rc.Request.SetRequestURI("/recall/v1/conversations")
		rc.Request.Header.Set(fifth.KeyHeaderName, "rk-acme")
		a.Server.Handle(&rc)
		if rc.Response.StatusCode() != 200 {
			t.Errorf("GET /recall/v1/conversations with the key in %s: got %d %s, want 200", fifth.KeyHeaderName, rc.Response.StatusCode(), rc.Response.Body())
		}
	})

	t.Run("summary", func(t *testing.T) {
		k := history.Key{Tenant: "acme", Conversation: "c"}
		for i := 1; i <= 3; i++ {
			u := fmt.Appendf(nil, `{"role":"user","content":"fact %d"}`, i)
			as := fmt.Appendf(nil, `{"role":"assistant","content":"ok %d"}`, i)
			snap, err := store.Load(context.Background(), k, history.Query{After: ^uint64(0)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Commit(context.Background(), k, history.Change{Version: snap.Meta.Version, Model: "m5", Now: int64(i) * 1e9,
				Append: []history.Message{{Role: "user", Raw: u, Hash: chat.Hash(u), Tokens: 10}, {Role: "assistant", Raw: as, Hash: chat.Hash(as), Tokens: 10}}}); err != nil {
				t.Fatal(err)
			}
		}
		meta, err := a.Summaries.Summarize(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		var got request
		select {
		case got = <-requests:
		default:
			t.Fatal("the summariser sent no request to the upstream")
		}
		if got.path != "/v1/fifth/talk" || got.key != "sk-up" || got.bearer != "" {
			t.Errorf("request to %q with %s %q and Authorization %q; want /v1/fifth/talk with the tenant's key sk-up and no Authorization", got.path, fifth.KeyHeaderName, got.key, got.bearer)
		}
		gotBody := got.body
		b := gjson.ParseBytes(gotBody)
		if b.Get("model").Str != "m5" || b.Get("limit").Int() <= 0 {
			t.Errorf("body %s: want model m5 and a limit", gotBody)
		}
		if rules := b.Get("rules").Array(); len(rules) != 1 || rules[0].Get("speaker").Str != "system" || rules[0].Get("says").Str == "" {
			t.Errorf("body %s: want the instructions as one system rule", gotBody)
		}
		turns := b.Get("turns").Array()
		if len(turns) != 1 || turns[0].Get("speaker").Str != "user" || !strings.Contains(turns[0].Get("says").Str, "fact 1") {
			t.Errorf("body %s: want the transcript as one user turn", gotBody)
		}
		if meta.Summary == nil || meta.Summary.Text != "Ada likes tea." {
			t.Errorf("summary %+v, want the upstream's reply, Ada likes tea.", meta.Summary)
		}
	})
}

// fifthTenant loads a tenant acme, key rk-acme, whose upstream at
// baseURL speaks the fifth protocol.
func fifthTenant(t *testing.T, baseURL string) *config.Set {
	t.Helper()
	g := config.DefaultGlobal()
	g.TenantsDir = t.TempDir()
	g.Defaults.Summary.TriggerTurns, g.Defaults.Summary.KeepTurns = 4, 1
	file := "id: acme\napi_keys: [rk-acme]\nupstream:\n  base_url: " + baseURL + "\n  api_key: sk-up\n  protocol: " + fifth.Kind + "\n"
	if err := os.WriteFile(filepath.Join(g.TenantsDir, "acme.yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("a tenant of upstream.protocol %s: %v", fifth.Kind, err)
	}
	return set
}
