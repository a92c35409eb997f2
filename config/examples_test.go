package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

// exampleEnv supplies the variables the example files reference.
var exampleEnv = map[string]string{
	"RECALL_ADMIN_KEY": "adm-example-admin-key",
	"ACME_OPENAI_KEY":  "sk-example-acme-openai-key",
	"DATABASE_URL":     "postgres://recall:example@db:5432/recall",
	"REPLICA_URL":      "http://10.0.0.11:8081",
}

// The examples are loaded as a user would load them, so they never rot.
func TestExamples(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		check func(t *testing.T, g Global, s *Set)
	}{
		{
			name: "single tenant",
			path: "../examples/single-tenant.yaml",
			check: func(t *testing.T, g Global, s *Set) {
				if !s.PassThrough() || len(s.Tenants()) != 1 {
					t.Fatalf("got %d tenants, pass-through %v, want the one implicit tenant", len(s.Tenants()), s.PassThrough())
				}
				if w := s.Tenants()[0].History.ModelWindows["my-local-llama"]; w != 8192 {
					t.Errorf("model_windows: got %d, want 8192", w)
				}
			},
		},
		{
			name: "replicas",
			path: "../examples/replicas/recall.yaml",
			check: func(t *testing.T, g Global, s *Set) {
				if g.StoreURL.Reveal() != exampleEnv["DATABASE_URL"] || g.StoreMaxConns != 10 {
					t.Errorf("got store_url %q, store_max_conns %d; want the env value and 10", g.StoreURL.Reveal(), g.StoreMaxConns)
				}
				if g.ReplicaURL != exampleEnv["REPLICA_URL"] {
					t.Errorf("got replica_url %q, want the env value", g.ReplicaURL)
				}
			},
		},
		{
			name: "multi tenant",
			path: "../examples/multi-tenant/recall.yaml",
			check: func(t *testing.T, g Global, s *Set) {
				if g.AdminKey.Reveal() != exampleEnv["RECALL_ADMIN_KEY"] {
					t.Errorf("admin_key: got %q, want the env value", g.AdminKey.Reveal())
				}
				acme, ok := s.Authenticate("rk-acme-1")
				if !ok || acme.ID != "acme" {
					t.Fatalf("rk-acme-1: got (%v, %v), want acme", acme, ok)
				}
				if acme.Upstream.APIKey.Reveal() != exampleEnv["ACME_OPENAI_KEY"] {
					t.Errorf("acme api_key: got %q, want the env value", acme.Upstream.APIKey.Reveal())
				}
				if acme.History.BudgetTokens != 32000 || acme.History.IdleTimeout != g.Defaults.History.IdleTimeout {
					t.Errorf("acme: got budget %d idle %s, want 32000 and the defaults' %s",
						acme.History.BudgetTokens, acme.History.IdleTimeout, g.Defaults.History.IdleTimeout)
				}
				globex, ok := s.Authenticate("rk-globex-demo-key")
				if !ok || globex.ID != "globex" {
					t.Fatalf("rk-globex-demo-key: got (%v, %v), want globex (is the sha256 in globex.yaml right?)", globex, ok)
				}
				if globex.Upstream.BaseURL != "http://127.0.0.1:11434/v1" {
					t.Errorf("globex base_url: got %q", globex.Upstream.BaseURL)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, s := loadExample(t, tt.path)
			tt.check(t, g, s)
		})
	}
}

// loadExample loads the example configuration at path and its tenants,
// with the variables the examples name set.
func loadExample(t *testing.T, path string) (Global, *Set) {
	t.Helper()
	g, err := LoadGlobalEnv(path, env(exampleEnv))
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadTenants(g, env(exampleEnv))
	if err != nil {
		t.Fatal(err)
	}
	return g, s
}

func TestExamplesNeedTheirVariables(t *testing.T) {
	g, err := LoadGlobalEnv("../examples/multi-tenant/recall.yaml", env(exampleEnv))
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadTenants(g, env(nil))
	if !containsLine(err, "acme.yaml: upstream.api_key: environment variable ACME_OPENAI_KEY is not set") {
		t.Errorf("got %v, want the unset ACME_OPENAI_KEY named", err)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		golden string
	}{
		{"single tenant", "../examples/single-tenant.yaml", "describe-single.golden"},
		{"multi tenant", "../examples/multi-tenant/recall.yaml", "describe-multi.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, s := loadExample(t, tt.path)
			var buf bytes.Buffer
			if err := Describe(&buf, g, s); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			for _, secret := range []string{"adm-example-admin-key", "sk-example-acme-openai-key", "rk-acme-1"} {
				if strings.Contains(got, secret) {
					t.Errorf("got %q in the description, want it masked", secret)
				}
			}
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestDescribe -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant (testdata/%s)\n%s", got, tt.golden, want)
			}
		})
	}
}

func TestDescribeMasksHeaders(t *testing.T) {
	g, tn, secrets := secretFixture()
	tn.Upstream.Headers = map[string]string{"X-Api-Key": "hdr-TOPSECRET-value", "X-Org": "org-visible"}
	s, err := newSet(g, []*Tenant{tn})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Describe(&buf, g, s); err != nil {
		t.Fatal(err)
	}
	for _, secret := range append(secrets, "hdr-TOPSECRET-value") {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("got %q in\n%s\nwant it masked", secret, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "org-visible") {
		t.Errorf("got\n%s\nwant the non-credential header value shown", buf.String())
	}
}
