package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
)

func TestDefaultGlobal(t *testing.T) {
	g := DefaultGlobal()
	if err := g.Validate(); err != nil {
		t.Fatalf("DefaultGlobal().Validate() = %v, want nil", err)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"listen", g.Listen, "127.0.0.1:8080"},
		{"data_dir", g.DataDir, "./recall-data"},
		{"tenants_dir", g.TenantsDir, ""},
		{"admin_key", g.AdminKey, Secret("")},
		{"log_format", g.LogFormat, "json"},
		{"log_level", g.LogLevel, "info"},
		{"max_body_bytes", g.MaxBodyBytes, 32 << 20},
		{"cache_mb", g.CacheMB, 128},
		{"memory_limit_mb", g.MemoryLimitMB, 0},
		{"derived memory limit", g.MemoryLimit(), int64(128+512) << 20},
		{"min_free_mb", g.MinFreeMB, 256},
		{"sync_writes", *g.SyncWrites, true},
		{"aio_fsync", g.AIOFsync, true},
		{"api.max_concurrent", g.API.MaxConcurrent, 0},
		{"api.max_concurrent_per_tenant", g.API.MaxConcurrentPerTenant, 2},
		{"api.heavy_timeout", g.API.HeavyTimeout, Duration(10 * time.Second)},
		{"base_url", g.Defaults.Upstream.BaseURL, "https://api.openai.com/v1"},
		{"api_key", g.Defaults.Upstream.APIKey, Secret("")},
		{"timeout", g.Defaults.Upstream.Timeout, Duration(10 * time.Minute)},
		{"conversation_header", g.Defaults.History.ConversationHeader, "X-Conversation-ID"},
		{"mode", g.Defaults.History.Mode, "auto"},
		{"budget_tokens", g.Defaults.History.BudgetTokens, 0},
		{"low_water", g.Defaults.History.LowWater, 0.7},
		{"max_turns", g.Defaults.History.MaxTurns, 0},
		{"old_tool_result_chars", g.Defaults.History.OldToolResultChars, 2000},
		{"stored_tool_result_chars", g.Defaults.History.StoredToolResultChars, 50000},
		{"strategies", g.Defaults.History.Strategies, []string{"tool_result_truncator", "sliding_window", "token_budget"}},
		{"encoding", g.Defaults.History.Encoding, ""},
		{"idle_timeout", g.Defaults.History.IdleTimeout, Duration(0)},
		{"retention_ttl", g.Defaults.History.RetentionTTL, Duration(0)},
		{"summary.enabled", g.Defaults.Summary.Enabled, true},
		{"summary.model", g.Defaults.Summary.Model, ""},
		{"summary.trigger_turns", g.Defaults.Summary.TriggerTurns, 10},
		{"summary.keep_turns", g.Defaults.Summary.KeepTurns, 3},
		{"summary.max_tokens", g.Defaults.Summary.MaxTokens, 1000},
		{"summary.max_calls_per_job", g.Defaults.Summary.MaxCallsPerJob, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %#v, want %#v", tt.got, tt.want)
			}
		})
	}
}

func TestDefaultGlobalFresh(t *testing.T) {
	a, b := DefaultGlobal(), DefaultGlobal()
	*a.SyncWrites = false
	a.Defaults.History.Strategies[0] = "changed"
	if !*b.SyncWrites || b.Defaults.History.Strategies[0] != history.NameToolResultTruncator {
		t.Errorf("got shared state between two DefaultGlobal calls, want fresh values")
	}
}

func TestLoadGlobal(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		file  string // "" means no file
		env   map[string]string
		check func(t *testing.T, g Global)
	}{
		{
			name: "no file is the defaults",
			check: func(t *testing.T, g Global) {
				want := DefaultGlobal()
				if !reflect.DeepEqual(g, want) {
					t.Errorf("got %+v, want %+v", g, want)
				}
			},
		},
		{
			name: "empty file is the defaults",
			file: "# nothing here\n",
			check: func(t *testing.T, g Global) {
				if g.Listen != "127.0.0.1:8080" || g.Defaults.History.BudgetTokens != 0 {
					t.Errorf("got listen %q budget %d, want defaults", g.Listen, g.Defaults.History.BudgetTokens)
				}
			},
		},
		{
			name: "file keys override, the rest stay default",
			file: "listen: \":9000\"\nsync_writes: false\naio_fsync: false\ndefaults:\n  history:\n    budget_tokens: 4000\n",
			check: func(t *testing.T, g Global) {
				if g.Listen != ":9000" {
					t.Errorf("listen: got %q, want %q", g.Listen, ":9000")
				}
				if *g.SyncWrites {
					t.Errorf("sync_writes: got true, want false")
				}
				if g.AIOFsync {
					t.Errorf("aio_fsync: got true, want false")
				}
				if g.Defaults.History.BudgetTokens != 4000 {
					t.Errorf("budget_tokens: got %d, want 4000", g.Defaults.History.BudgetTokens)
				}
				if g.Defaults.History.LowWater != 0.7 || g.Defaults.Summary.TriggerTurns != 10 {
					t.Errorf("got low_water %g trigger %d, want defaults 0.7 and 10",
						g.Defaults.History.LowWater, g.Defaults.Summary.TriggerTurns)
				}
			},
		},
		{
			name: "null sync_writes stays true",
			file: "sync_writes: null\n",
			check: func(t *testing.T, g Global) {
				if g.SyncWrites == nil || !*g.SyncWrites {
					t.Errorf("got %v, want true", g.SyncWrites)
				}
			},
		},
		{
			name: "relative tenants_dir is resolved against the file",
			file: "tenants_dir: ./tenants\n",
			check: func(t *testing.T, g Global) {
				if want := filepath.Join(dir, "tenants"); g.TenantsDir != want {
					t.Errorf("got %q, want %q", g.TenantsDir, want)
				}
			},
		},
		{
			name: "env overrides the file",
			file: "listen: \"127.0.0.1:1\"\ndata_dir: /from/file\n",
			env: map[string]string{
				"RECALL_LISTEN": "0.0.0.0:8081", "RECALL_UPSTREAM_URL": "http://up:1234/v1",
				"RECALL_DATA_DIR": "/from/env",
			},
			check: func(t *testing.T, g Global) {
				if g.Listen != "0.0.0.0:8081" || g.Defaults.Upstream.BaseURL != "http://up:1234/v1" || g.DataDir != "/from/env" {
					t.Errorf("got listen %q base_url %q data_dir %q, want the env values",
						g.Listen, g.Defaults.Upstream.BaseURL, g.DataDir)
				}
			},
		},
		{
			name: "admin_key expands",
			file: "admin_key: \"${ADMIN}\"\n",
			env:  map[string]string{"ADMIN": "adm-0123456789"},
			check: func(t *testing.T, g Global) {
				if g.AdminKey.Reveal() != "adm-0123456789" {
					t.Errorf("got %q, want %q", g.AdminKey.Reveal(), "adm-0123456789")
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = writeFile(t, dir, "recall"+string(rune('a'+i))+".yaml", tt.file)
			}
			g, err := LoadGlobalEnv(path, env(tt.env))
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if g.File != path {
				t.Errorf("File: got %q, want %q", g.File, path)
			}
			tt.check(t, g)
		})
	}
}

func TestApplyEnv(t *testing.T) {
	tests := []struct {
		name                     string
		env                      map[string]string
		listen, baseURL, dataDir string
	}{
		{"none", nil, "127.0.0.1:8080", "https://api.openai.com/v1", "./recall-data"},
		{"all", map[string]string{"RECALL_LISTEN": ":1", "RECALL_UPSTREAM_URL": "http://x/v1", "RECALL_DATA_DIR": "/d"}, ":1", "http://x/v1", "/d"},
		{"empty values change nothing", map[string]string{"RECALL_LISTEN": "", "RECALL_DATA_DIR": ""}, "127.0.0.1:8080", "https://api.openai.com/v1", "./recall-data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := DefaultGlobal()
			if err := g.ApplyEnv(env(tt.env)); err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if g.Listen != tt.listen || g.Defaults.Upstream.BaseURL != tt.baseURL || g.DataDir != tt.dataDir {
				t.Errorf("got (%q, %q, %q), want (%q, %q, %q)",
					g.Listen, g.Defaults.Upstream.BaseURL, g.DataDir, tt.listen, tt.baseURL, tt.dataDir)
			}
		})
	}
}

func TestLoadGlobalErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		lines [][]string // each: parts one line must contain
	}{
		{
			name:  "unknown key names file and key",
			file:  "listen: \":1\"\ndefaults:\n  history:\n    budget_token: 100\n",
			lines: [][]string{{"recall.yaml: defaults.history.budget_token: unknown key (line 4)"}},
		},
		{
			name: "unknown keys and bad values reported together",
			file: "listen: nope\nbogus: 1\n",
			lines: [][]string{
				{"recall.yaml: bogus: unknown key (line 2)"},
				{"recall.yaml: listen: want host:port"},
			},
		},
		{
			name: "several problems at once",
			file: "listen: nope\nlog_format: xml\nmax_body_bytes: 0\ncache_mb: -1\ndefaults:\n  history:\n    budget_tokens: 10\n    low_water: 1.5\n  summary:\n    keep_turns: 10\n",
			lines: [][]string{
				{"recall.yaml: listen: want host:port"},
				{"recall.yaml: log_format: must be"},
				{"recall.yaml: max_body_bytes: must be > 0"},
				{"recall.yaml: cache_mb: must be >= 0"},
				{"recall.yaml: defaults.history.budget_tokens: must be 0 (half the model's window) or >= 256"},
				{"recall.yaml: defaults.history.low_water: must be in (0, 1]"},
				{"recall.yaml: defaults.summary.keep_turns: must be >= 0 and < trigger_turns"},
			},
		},
		{
			name:  "bad env override is reported under the variable's name",
			env:   map[string]string{"RECALL_UPSTREAM_URL": "ftp://x"},
			file:  "log_level: info\n",
			lines: [][]string{{`RECALL_UPSTREAM_URL: "ftp://x": must be an absolute http:// or https:// URL`}},
		},
		{
			name:  "env URL that does not parse says why",
			env:   map[string]string{"RECALL_UPSTREAM_URL": "ht!tp://x"},
			file:  "log_level: info\n",
			lines: [][]string{{`RECALL_UPSTREAM_URL: "ht!tp://x": must be an absolute http:// or https:// URL: first path segment in URL cannot contain colon`}},
		},
		{
			name:  "env URL credentials are masked",
			env:   map[string]string{"RECALL_UPSTREAM_URL": "https://user:s3cr3t@host:bad/v1"},
			file:  "log_level: info\n",
			lines: [][]string{{`RECALL_UPSTREAM_URL: "https://xxxxx@host:bad/v1": must be an absolute`}},
		},
		{
			name:  "bad RECALL_LISTEN is reported under its name",
			env:   map[string]string{"RECALL_LISTEN": "nope"},
			file:  "log_level: info\n",
			lines: [][]string{{`RECALL_LISTEN: "nope": want host:port such as 127.0.0.1:8080`}},
		},
		{
			name:  "a RECALL_STORE_URL that is not a PostgreSQL URL is reported, its password masked",
			env:   map[string]string{"RECALL_STORE_URL": "mysql://u:hunter2@db/recall"},
			file:  "log_level: info\n",
			lines: [][]string{{`RECALL_STORE_URL: "mysql://u:xxxxx@db/recall": want postgres://`}},
		},
		{
			name:  "a bad store_url is reported, its password masked",
			file:  "store_url: \"postgres://u:hunter2@/recall\"\nstore_max_conns: 0\n",
			lines: [][]string{{`store_url: "postgres://xxxxx@/recall": want a host`}, {"store_max_conns: must be >= 1, got 0"}},
		},
		{
			name: "api bounds are checked",
			file: "api:\n  max_concurrent: -1\n  max_concurrent_per_tenant: 0\n  heavy_timeout: 0s\n",
			lines: [][]string{
				{"recall.yaml: api.max_concurrent: must be >= 0 (0: one fewer than the CPUs), got -1"},
				{"recall.yaml: api.max_concurrent_per_tenant: must be >= 1, got 0"},
				{"recall.yaml: api.heavy_timeout: must be > 0, got 0s"},
			},
		},
		{
			name: "env and file problems together",
			env:  map[string]string{"RECALL_UPSTREAM_URL": "ht!tp://x", "RECALL_LISTEN": ":99999"},
			file: "log_format: xml\n",
			lines: [][]string{
				{`RECALL_UPSTREAM_URL: "ht!tp://x"`},
				{`RECALL_LISTEN: ":99999": port must be a number from 0 to 65535`},
				{"recall.yaml: log_format: must be"},
			},
		},
		{
			name: "unset variable of a number key hides no other problem",
			file: "defaults:\n  history:\n    budget_tokens: ${NOPE_BUDGET}\n    max_turns: -1\n",
			lines: [][]string{
				{"recall.yaml: defaults.history.budget_tokens: environment variable NOPE_BUDGET is not set (line 3)"},
				{"recall.yaml: defaults.history.max_turns: must be >= 0, got -1"},
			},
		},
		{
			name: "every unset variable and every bad value in one pass",
			file: "admin_key: ${NOPE_ADMIN}\ncache_mb: lots\nlog_format: xml\ndefaults:\n  upstream:\n    timeout: ${NOPE_TIMEOUT}\n    api_key: ${NOPE_UP}\n  history:\n    strategies: [\"${NOPE_S}\", magic]\n",
			lines: [][]string{
				{"recall.yaml: admin_key: environment variable NOPE_ADMIN is not set (line 1)"},
				{"recall.yaml: cache_mb: want an integer, got a string (line 2)"},
				{"recall.yaml: log_format: must be"},
				{"recall.yaml: defaults.upstream.timeout: environment variable NOPE_TIMEOUT is not set (line 6)"},
				{"recall.yaml: defaults.upstream.api_key: environment variable NOPE_UP is not set (line 7)"},
				{"recall.yaml: defaults.history.strategies[0]: environment variable NOPE_S is not set (line 9)"},
				{`recall.yaml: defaults.history.strategies[1]: unknown strategy "magic"`},
			},
		},
		{
			name:  "unset variable in admin_key",
			file:  "admin_key: ${NOPE}\n",
			lines: [][]string{{"recall.yaml: admin_key: environment variable NOPE is not set (line 1)"}},
		},
		{
			name:  "syntax error",
			file:  "listen: [\n",
			lines: [][]string{{"recall.yaml: invalid YAML"}},
		},
		{
			name:  "two documents",
			file:  "listen: \":1\"\n---\nlisten: \":2\"\n",
			lines: [][]string{{"recall.yaml: more than one YAML document"}},
		},
		{
			name:  "top level not a mapping",
			file:  "- a\n- b\n",
			lines: [][]string{{"recall.yaml: (top level): want a mapping of keys, got a list"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "recall.yaml", tt.file)
			_, err := LoadGlobalEnv(path, env(tt.env))
			if err == nil {
				t.Fatalf("got nil error, want %d problems", len(tt.lines))
			}
			wantProblems(t, err, tt.lines)
		})
	}
}

// memory_limit_mb: derived from the cache by default, none at -1, as
// written otherwise, and nothing below -1.
func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int64
	}{
		{"cache_mb: 64\n", (64 + 512) << 20},
		{"cache_mb: 0\n", 512 << 20},
		{"cache_mb: 64\nmemory_limit_mb: 500\n", 500 << 20},
		{"memory_limit_mb: -1\n", 0},
	} {
		path := filepath.Join(t.TempDir(), "recall.yaml")
		if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		g, _, err := Load(path, func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatalf("%q: %v", tc.file, err)
		}
		if got := g.MemoryLimit(); got != tc.want {
			t.Errorf("%q: MemoryLimit() = %d MiB, want %d MiB", tc.file, got>>20, tc.want>>20)
		}
	}
	path := filepath.Join(t.TempDir(), "recall.yaml")
	if err := os.WriteFile(path, []byte("memory_limit_mb: -2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "memory_limit_mb") {
		t.Errorf("memory_limit_mb: -2 loaded, error %v", err)
	}
}
