package auth_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/apierr"
)

func TestKeyReadsBearerThenXAPIKey(t *testing.T) {
	tests := []struct {
		name    string
		headers [][2]string
		want    string
	}{
		{"bearer", [][2]string{{"Authorization", "Bearer k1"}}, "k1"},
		{"bearer any case, spaces trimmed", [][2]string{{"Authorization", "bearer  k1 "}}, "k1"},
		{"x-api-key", [][2]string{{"x-api-key", "k2"}}, "k2"},
		{"bearer wins over x-api-key", [][2]string{{"Authorization", "Bearer k1"}, {"X-Api-Key", "k2"}}, "k1"},
		{"empty bearer falls back", [][2]string{{"Authorization", "Bearer  "}, {"X-Api-Key", "k2"}}, "k2"},
		{"x-goog-api-key", [][2]string{{"x-goog-api-key", "k3"}}, "k3"},
		{"x-api-key wins over x-goog-api-key", [][2]string{{"X-Goog-Api-Key", "k3"}, {"X-Api-Key", "k2"}}, "k2"},
		{"basic is no key", [][2]string{{"Authorization", "Basic a2V5"}}, ""},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			for _, kv := range tt.headers {
				h.Set(kv[0], kv[1])
			}
			if got := string(auth.Key(&h)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// set loads a tenant acme with its own upstream key, a tenant pt that
// passes the client's key upstream, and an admin key.
func set(t *testing.T) *config.Set {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"acme.yaml": "id: acme\napi_keys: [\"rk-acme\"]\nupstream:\n  base_url: \"http://127.0.0.1:9/v1\"\n  api_key: \"sk-up\"\n",
		"pt.yaml":   "id: pt\napi_keys: [\"rk-pt\"]\nupstream:\n  base_url: \"http://127.0.0.1:9/v1\"\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g := config.DefaultGlobal()
	g.TenantsDir, g.AdminKey = dir, "rk-admin"
	s, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// passThrough loads the implicit pass-through tenant, and an admin key.
func passThrough(t *testing.T) *config.Set {
	t.Helper()
	g := config.DefaultGlobal()
	g.AdminKey = "rk-admin"
	s, err := config.LoadTenants(g, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAPICallers(t *testing.T) {
	tenants, pass := set(t), passThrough(t)
	ptNamespace := auth.Namespace(config.DefaultTenantID, "sk-own")
	tests := []struct {
		name          string
		set           *config.Set
		key, tenant   string
		wantNamespace string
		wantUpstream  string
		wantErr       *apierr.Error
	}{
		{name: "tenant key", set: tenants, key: "rk-acme", wantNamespace: "acme", wantUpstream: "sk-up"},
		{name: "tenant passing the client's key", set: tenants, key: "rk-pt", wantNamespace: "pt", wantUpstream: "rk-pt"},
		{name: "pass-through key", set: pass, key: "sk-own", wantNamespace: ptNamespace, wantUpstream: "sk-own"},
		{name: "no key", set: tenants, wantErr: apierr.NoAPIKey},
		{name: "unknown key", set: tenants, key: "rk-nobody", wantErr: apierr.InvalidAPIKey},
		{name: "admin on a tenant", set: tenants, key: "rk-admin", tenant: "acme", wantNamespace: "acme", wantUpstream: "sk-up"},
		{name: "admin on a pass-through namespace", set: pass, key: "rk-admin", tenant: ptNamespace, wantNamespace: ptNamespace},
		{name: "admin without a tenant", set: tenants, key: "rk-admin", wantErr: apierr.NoTenant},
		{name: "admin on an unknown tenant", set: tenants, key: "rk-admin", tenant: "globex", wantErr: apierr.UnknownTenant},
		{name: "admin on a namespace of a tenant that is not pass-through", set: tenants, key: "rk-admin", tenant: auth.Namespace("pt", "x"), wantErr: apierr.UnknownTenant},
		{name: "admin on a malformed namespace", set: pass, key: "rk-admin", tenant: "default.pt.ABC", wantErr: apierr.UnknownTenant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			if tt.key != "" {
				h.Set("X-Api-Key", tt.key)
			}
			if tt.tenant != "" {
				h.Set(auth.HeaderTenant, tt.tenant)
			}
			c, err := auth.API(tt.set, &h)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Namespace != tt.wantNamespace || c.UpstreamKey() != tt.wantUpstream {
				t.Errorf("got namespace %q upstream key %q, want %q %q", c.Namespace, c.UpstreamKey(), tt.wantNamespace, tt.wantUpstream)
			}
		})
	}
}

// The chat surface takes no admin key: it is nobody's tenant key.
func TestTenantRefusesTheAdminKey(t *testing.T) {
	if _, err := auth.Tenant(set(t), []byte("rk-admin")); !errors.Is(err, apierr.InvalidAPIKey) {
		t.Errorf("got %v, want %v", err, apierr.InvalidAPIKey)
	}
}

func TestPassedKeyOnlyInPassThrough(t *testing.T) {
	s := set(t)
	for _, tt := range []struct{ key, want string }{{"rk-acme", ""}, {"rk-pt", "rk-pt"}} {
		c, err := auth.Tenant(s, []byte(tt.key))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.PassedKey(); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.key, got, tt.want)
		}
	}
}
