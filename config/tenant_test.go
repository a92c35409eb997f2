package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// sha256Key is the "sha256:<hex>" form of key.
func sha256Key(key string) string {
	d := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(d[:])
}

func TestLoadTenantsPassThrough(t *testing.T) {
	g := DefaultGlobal()
	g.Defaults.History.BudgetTokens = 3000
	s, err := LoadTenants(g, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	ts := s.Tenants()
	if len(ts) != 1 || ts[0].ID != "default" || !ts[0].PassThrough || !s.PassThrough() {
		t.Fatalf("got %+v, want one pass-through tenant \"default\"", ts)
	}
	if ts[0].History.BudgetTokens != 3000 {
		t.Errorf("budget_tokens: got %d, want the defaults' 3000", ts[0].History.BudgetTokens)
	}
	tests := []struct {
		name   string
		bearer string
		wantOK bool
	}{
		{"any key", "sk-anything", true},
		{"another key", "x", true},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Authenticate(tt.bearer)
			if ok != tt.wantOK || (ok && got != ts[0]) {
				t.Errorf("got (%v, %v), want ok=%v", got, ok, tt.wantOK)
			}
		})
	}
}

func TestLoadTenantsDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "b.yaml", "id: beta\napi_keys: [\"rk-beta-1\", \""+sha256Key("rk-beta-2")+"\"]\n")
	writeFile(t, dir, "a.yml", "id: alpha\napi_keys: [\""+sha256Key("rk-alpha")+"\"]\nhistory:\n  budget_tokens: 2000\n")
	writeFile(t, dir, "notes.txt", "not a tenant")
	writeFile(t, dir, ".hidden.yaml", "garbage: [")
	g := globalWithTenants(dir)
	g.AdminKey = "adm-secret-key-0001"
	s, err := LoadTenants(g, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tn := range s.Tenants() {
		ids = append(ids, tn.ID)
	}
	if got, want := strings.Join(ids, ","), "alpha,beta"; got != want {
		t.Fatalf("tenants: got %s, want %s", got, want)
	}
	alpha, _ := s.Tenant("alpha")
	if alpha.History.BudgetTokens != 2000 || alpha.History.LowWater != 0.7 || alpha.Summary.TriggerTurns != 10 {
		t.Errorf("alpha: got budget %d low_water %g trigger %d, want 2000 and inherited 0.7, 10",
			alpha.History.BudgetTokens, alpha.History.LowWater, alpha.Summary.TriggerTurns)
	}
	tests := []struct {
		name   string
		bearer string
		want   string // tenant id, "" for rejected
	}{
		{"plain key", "rk-beta-1", "beta"},
		{"sha256 key", "rk-beta-2", "beta"},
		{"sha256 only tenant", "rk-alpha", "alpha"},
		{"the digest itself is not a key", sha256Key("rk-alpha"), ""},
		{"unknown", "rk-nobody", ""},
		{"prefix of a key", "rk-beta-", ""},
		{"empty", "", ""},
		{"admin key is not a tenant key", "adm-secret-key-0001", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Authenticate(tt.bearer)
			id := ""
			if ok {
				id = got.ID
			}
			if id != tt.want {
				t.Errorf("got %q, want %q", id, tt.want)
			}
		})
	}
	t.Run("admin", func(t *testing.T) {
		if !s.Admin("adm-secret-key-0001") || s.Admin("rk-beta-1") || s.Admin("") {
			t.Errorf("got Admin(admin, tenant, empty) = (%v, %v, %v), want (true, false, false)",
				s.Admin("adm-secret-key-0001"), s.Admin("rk-beta-1"), s.Admin(""))
		}
	})
}

func TestLoadTenantsErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		admin Secret
		lines [][]string // parts each of which some line must contain
		count int
	}{
		{
			name:  "no tenant files",
			files: map[string]string{"readme.md": "x"},
			lines: [][]string{{"no tenant files"}},
			count: 1,
		},
		{
			name: "duplicate id",
			files: map[string]string{
				"a.yaml": "id: same\napi_keys: [k1]\n",
				"b.yaml": "id: same\napi_keys: [k2]\n",
			},
			lines: [][]string{{"b.yaml: id: tenant \"same\" is already defined in", "a.yaml"}},
			count: 1,
		},
		{
			name: "key used by two tenants, plain and sha256",
			files: map[string]string{
				"a.yaml": "id: a\napi_keys: [rk-shared-key]\n",
				"b.yaml": "id: b\napi_keys: [\"" + sha256Key("rk-shared-key") + "\"]\n",
			},
			lines: [][]string{{"b.yaml: api_keys[0]: key already used by tenant \"a\""}},
			count: 1,
		},
		{
			name:  "key repeated in one tenant",
			files: map[string]string{"a.yaml": "id: a\napi_keys: [rk-1, rk-1]\n"},
			lines: [][]string{{"a.yaml: api_keys[1]: same key as api_keys[0]"}},
			count: 1,
		},
		{
			name:  "tenant key equal to the admin key",
			files: map[string]string{"a.yaml": "id: a\napi_keys: [rk-admin-also]\n"},
			admin: "rk-admin-also",
			lines: [][]string{{"a.yaml: api_keys[0]: same key as the admin_key"}},
			count: 1,
		},
		{
			name: "problems of every file at once",
			files: map[string]string{
				"a.yaml": "id: a\napi_keys: [k]\nhistory:\n  mode: never\n",
				"b.yaml": "id: b\napi_keys: [k2]\nsumary: {}\n",
				"c.yaml": "id: c\napi_keys: [\"${MISSING}\"]\n",
				"d.yaml": "id: d\napi_keys: [k4]\n",
			},
			lines: [][]string{
				{"a.yaml: history.mode: must be one of"},
				{"b.yaml: sumary: unknown key (line 3)"},
				{"c.yaml: api_keys[0]: environment variable MISSING is not set"},
			},
			count: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			g := globalWithTenants(dir)
			g.AdminKey = tt.admin
			s, err := LoadTenants(g, env(nil))
			if err == nil {
				t.Fatalf("got set %v, want an error", s.Tenants())
			}
			for _, parts := range tt.lines {
				if !containsLine(err, parts...) {
					t.Errorf("got\n%v\nwant a line containing %q", err, parts)
				}
			}
			if got := len(unwrapAll(err)); got != tt.count {
				t.Errorf("got %d problems, want %d:\n%v", got, tt.count, err)
			}
			for _, secret := range []string{"rk-shared-key", "rk-admin-also"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("got %q in the error, want no key in messages", secret)
				}
			}
		})
	}
}

func TestLoadTenantsMissingDir(t *testing.T) {
	_, err := LoadTenants(globalWithTenants(t.TempDir()+"/nope"), env(nil))
	if err == nil || !strings.HasPrefix(err.Error(), "config: read tenants dir:") {
		t.Errorf("got %v, want a read tenants dir error", err)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	dir := b.TempDir()
	for _, id := range []string{"a", "b", "c", "d"} {
		writeFile(b, dir, id+".yaml", "id: "+id+"\napi_keys: [rk-"+id+"-0123456789abcdef0123456789abcdef, \""+sha256Key("rk-"+id+"-2")+"\"]\n")
	}
	s, err := LoadTenants(globalWithTenants(dir), env(nil))
	if err != nil {
		b.Fatal(err)
	}
	bearer := "rk-c-0123456789abcdef0123456789abcdef"
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Authenticate(bearer); !ok {
			b.Fatal("got false, want the key accepted")
		}
	}
}

func TestAuthenticateAllocs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "id: a\napi_keys: [rk-a-0123456789abcdef0123456789abcdef]\n")
	s, err := LoadTenants(globalWithTenants(dir), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { s.Authenticate("rk-a-0123456789abcdef0123456789abcdef") }); n != 0 {
		t.Errorf("got %v allocations per Authenticate, want 0", n)
	}
}
