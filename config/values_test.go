package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSecretString(t *testing.T) {
	tests := []struct {
		name string
		in   Secret
		want string
	}{
		{"empty", "", ""},
		{"short shows only the length", "rk-acme-1", "…(9 chars)"},
		{"long shows three characters", "sk-proj-abcdefghijklmnop", "sk-…(24 chars)"},
		{"sha256 shows four hex digits", Secret(sha256Key("x")), "sha256:2d71…"},
		{"runes are counted, not bytes", "ключ-ключ-ключ", "клю…(14 chars)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := tt.in.Reveal(); got != string(tt.in) {
				t.Errorf("Reveal: got %q, want %q", got, string(tt.in))
			}
		})
	}
}

// secretFixture is a Global and a Tenant holding secrets that no printout
// may contain.
func secretFixture() (Global, *Tenant, []string) {
	secrets := []string{"adm-TOPSECRET-admin", "sk-TOPSECRET-upstream", "rk-TOPSECRET-client"}
	g := DefaultGlobal()
	g.AdminKey = Secret(secrets[0])
	g.Defaults.Upstream.APIKey = Secret(secrets[1])
	tn := &Tenant{ID: "acme", APIKeys: []Secret{Secret(secrets[2])}, Policy: g.Defaults.clone(), File: "acme.yaml"}
	return g, tn, secrets
}

func TestSecretNeverPrinted(t *testing.T) {
	g, tn, secrets := secretFixture()
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "tenant", tn, "key", tn.APIKeys[0])
	var jsonLog bytes.Buffer
	slog.New(slog.NewJSONHandler(&jsonLog, nil)).Info("x", "key", g.AdminKey, "global", g)
	js, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yaml.Marshal(tn)
	if err != nil {
		t.Fatal(err)
	}
	outputs := []struct {
		name string
		out  string
	}{
		{"%v global", fmt.Sprintf("%v", g)},
		{"%+v global", fmt.Sprintf("%+v", g)},
		{"%#v global", fmt.Sprintf("%#v", g)},
		{"%v tenant", fmt.Sprintf("%v", tn)},
		{"%+v tenant", fmt.Sprintf("%+v", *tn)},
		{"%#v tenant", fmt.Sprintf("%#v", *tn)},
		{"%s secret", fmt.Sprintf("%s", g.AdminKey)},
		{"%q secret", fmt.Sprintf("%q", g.AdminKey)},
		{"%x secret", fmt.Sprintf("%x", g.AdminKey)},
		{"%d secret", fmt.Sprintf("%d", g.AdminKey)},
		{"Sprint keys", fmt.Sprint(tn.APIKeys)},
		{"slog text", logBuf.String()},
		{"slog json", jsonLog.String()},
		{"json", string(js)},
		{"yaml", string(ys)},
	}
	for _, o := range outputs {
		t.Run(o.name, func(t *testing.T) {
			for _, s := range secrets {
				if strings.Contains(o.out, s) || strings.Contains(o.out, "TOPSECRET") {
					t.Errorf("got %q, want no trace of %q", o.out, s)
				}
			}
			if !strings.Contains(o.out, "chars") && !strings.Contains(o.out, "…") &&
				!strings.Contains(o.out, fmt.Sprintf("%x", "…")) {
				t.Errorf("got %q, want a mask in it", o.out)
			}
		})
	}
}

func TestDurationYAML(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Duration
		wantErr bool
	}{
		{"seconds", "d: 30s", Duration(30e9), false},
		{"zero", "d: 0s", 0, false},
		{"bare zero", "d: 0", 0, false},
		{"compound", "d: 1h30m", Duration(90 * 60e9), false},
		{"no unit", "d: 30", 0, true},
		{"list", "d: [1]", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct{ D Duration }
			err := yaml.Unmarshal([]byte(tt.in), &v)
			if (err != nil) != tt.wantErr || v.D != tt.want {
				t.Errorf("got (%v, %v), want (%v, error %v)", v.D, err, tt.want, tt.wantErr)
			}
		})
	}
	out, err := yaml.Marshal(struct{ D Duration }{Duration(90e9)})
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Errorf("marshal: got (%q, %v), want \"d: 1m30s\\n\"", out, err)
	}
}

// TestStoreURLMasked: a store URL is accepted from the file and the
// environment, and its password never prints: not with fmt, slog, YAML,
// JSON, nor in check-config's description.
func TestStoreURLMasked(t *testing.T) {
	const url = "postgres://recall:hunter2@db:5432/recall?sslmode=disable&password=hunter3"
	path := writeFile(t, t.TempDir(), "recall.yaml", "store_url: \"${DB}\"\nstore_max_conns: 20\n")
	g, err := LoadGlobalEnv(path, env(map[string]string{"DB": url}))
	if err != nil {
		t.Fatal(err)
	}
	if g.StoreURL.Reveal() != url || g.StoreMaxConns != 20 {
		t.Fatalf("got %q, %d; want the URL and 20", g.StoreURL.Reveal(), g.StoreMaxConns)
	}
	fromEnv, err := LoadGlobalEnv("", env(map[string]string{EnvStoreURL: url}))
	if err != nil || fromEnv.StoreURL.Reveal() != url {
		t.Fatalf("from %s: got %q, %v", EnvStoreURL, fromEnv.StoreURL.Reveal(), err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "store", g.StoreURL)
	js, _ := json.Marshal(g.StoreURL)
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", g.StoreURL), "%#v": fmt.Sprintf("%#v", g.StoreURL), "%s": fmt.Sprintf("%s", g.StoreURL),
		"slog": logged.String(), "json": string(js), "describe": described(t, g),
	} {
		if strings.Contains(out, "hunter") {
			t.Errorf("%s: %q shows the password", name, out)
		}
		if !strings.Contains(out, "db:5432/recall") {
			t.Errorf("%s: %q hides the host and database", name, out)
		}
	}
}
