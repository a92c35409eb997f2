package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadReportsEveryFile checks that Load lists the problems of the
// global file and of every tenant file in one pass: a global file with
// problems hides none of the tenant files' problems, and what a tenant
// inherits from a bad global key is reported once, under the global file.
func TestLoadReportsEveryFile(t *testing.T) {
	tests := []struct {
		name    string
		global  string
		tenants map[string]string // file name -> content; nil: no tenants_dir
		env     map[string]string
		lines   [][]string // parts each of which some line must contain
	}{
		{
			name:   "global and tenant files together",
			global: "tenants_dir: tenants\nadmin_key: ${NOPE_ADMIN}\ndefaults:\n  history:\n    max_turns: -1\n",
			tenants: map[string]string{
				"a.yaml": "id: a\napi_keys: [\"${NOPE_A}\"]\nupstream:\n  api_key: ${NOPE_A_UP}\n",
				"b.yaml": "id: b\napi_keys: [rk-b]\nhistory:\n  budget_tokens: ${NOPE_B}\n  mode: never\n",
				"c.yaml": "id: c\napi_keys: [rk-c]\nhistory:\n  max_turns: -2\n",
			},
			lines: [][]string{
				{"recall.yaml: admin_key: environment variable NOPE_ADMIN is not set (line 2)"},
				{"recall.yaml: defaults.history.max_turns: must be >= 0, got -1"},
				{"a.yaml: api_keys[0]: environment variable NOPE_A is not set (line 2)"},
				{"a.yaml: upstream.api_key: environment variable NOPE_A_UP is not set (line 4)"},
				{"b.yaml: history.budget_tokens: environment variable NOPE_B is not set (line 4)"},
				{"b.yaml: history.mode: must be one of"},
				{"c.yaml: history.max_turns: must be >= 0, got -2"},
			},
		},
		{
			name:   "a bad environment override does not hide the tenant files",
			global: "tenants_dir: tenants\n",
			env:    map[string]string{"RECALL_UPSTREAM_URL": "ht!tp://x"},
			tenants: map[string]string{
				"a.yaml": "id: a\napi_keys: [\"${NOPE_A}\"]\n",
			},
			lines: [][]string{
				{`RECALL_UPSTREAM_URL: "ht!tp://x"`},
				{"a.yaml: api_keys[0]: environment variable NOPE_A is not set (line 2)"},
			},
		},
		{
			name:   "without tenants_dir the defaults are reported once",
			global: "defaults:\n  history:\n    max_turns: -1\n    budget_tokens: ${NOPE_BUDGET}\n",
			lines: [][]string{
				{"recall.yaml: defaults.history.max_turns: must be >= 0, got -1"},
				{"recall.yaml: defaults.history.budget_tokens: environment variable NOPE_BUDGET is not set"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "recall.yaml", tt.global)
			if tt.tenants != nil {
				tdir := filepath.Join(dir, "tenants")
				mkdir(t, tdir)
				for name, content := range tt.tenants {
					writeFile(t, tdir, name, content)
				}
			}
			g, s, err := Load(path, env(tt.env))
			if err == nil {
				t.Fatalf("got (%+v, %v, nil), want an error", g, s)
			}
			wantProblems(t, err, tt.lines)
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "recall.yaml", "tenants_dir: tenants\nlisten: \"127.0.0.1:9\"\n")
	mkdir(t, filepath.Join(dir, "tenants"))
	writeFile(t, filepath.Join(dir, "tenants"), "a.yaml", "id: a\napi_keys: [\"${KEY_A}\"]\n")
	g, s, err := Load(path, env(map[string]string{"KEY_A": "rk-a-1", "RECALL_LISTEN": "127.0.0.1:7"}))
	if err != nil {
		t.Fatalf("got error %v, want nil", err)
	}
	if g.Listen != "127.0.0.1:7" {
		t.Errorf("listen: got %q, want %q", g.Listen, "127.0.0.1:7")
	}
	if got := ids(s); got != "a" {
		t.Errorf("tenants: got %q, want %q", got, "a")
	}
	if _, ok := s.Authenticate("rk-a-1"); !ok {
		t.Errorf("Authenticate(expanded key): got false, want true")
	}
}

// mkdir makes dir or fails the test.
func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
