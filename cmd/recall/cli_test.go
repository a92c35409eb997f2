package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/proctest"
)

// cliEnv lists every variable the commands read; each test starts with all
// of them empty (which the commands treat as unset), whatever the
// environment the tests run in.
var cliEnv = []string{"RECALL_CONFIG", "RECALL_LISTEN", "RECALL_UPSTREAM_URL", "RECALL_UPSTREAM_PROTOCOL", "RECALL_DATA_DIR",
	"RECALL_STORE_URL", "RECALL_REPLICA_URL", "RECALL_ADMIN_KEY", "RECALL_ADDR", "RECALL_API_KEY"}

func TestCLI(t *testing.T) {
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ready"}`))
	}))
	defer ready.Close()
	draining := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("{\"status\":\n\"shutting down\"}"))
	}))
	defer draining.Close()
	closed := proctest.FreeAddr(t)

	dir := t.TempDir()
	bad := writeConfig(t, dir, "bad.yaml", "tenants_dir: tenants\nadmin_key: ${NOPE_ADMIN}\ncache_mb: lots\n")
	writeConfig(t, filepath.Join(dir, "tenants"), "a.yaml", "id: a\napi_keys: [\"${NOPE_A}\"]\nhistory:\n  budget_tokens: ${NOPE_BUDGET}\n  max_turns: -1\n")
	writeConfig(t, filepath.Join(dir, "tenants"), "b.yaml", "id: b\napi_keys: [rk-b]\nupstream:\n  api_key: ${NOPE_B}\n")

	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		version    string
		code       int
		stdout     []string // each must appear in stdout
		stderr     []string // each must appear in stderr
		quietOut   bool     // stdout must be empty
		quietErr   bool     // stderr must be empty
		notStderr  []string // none may appear in stderr
		stdoutLine bool     // stdout is exactly one line
	}{
		{name: "no command", args: nil, code: 2, stderr: []string{"usage: recall <command>"}, quietOut: true},
		{name: "unknown command", args: []string{"serv"}, code: 2, stderr: []string{`unknown command "serv"`}, quietOut: true},
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"serve", "check-config", "health", "conversations", "exchanges", "version"}, quietErr: true},
		{
			name: "serve --help", args: []string{"serve", "--help"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall serve [--config FILE]", "-config file",
				"RECALL_CONFIG", "RECALL_LISTEN             127.0.0.1:8080", "RECALL_UPSTREAM_URL       https://api.openai.com/v1",
				"RECALL_UPSTREAM_PROTOCOL  openai", "RECALL_DATA_DIR           ./recall-data", "RECALL_STORE_URL", "RECALL_REPLICA_URL", "RECALL_ADMIN_KEY"},
		},
		{
			name: "serve -h", args: []string{"serve", "-h"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall serve", "RECALL_LISTEN"},
		},
		{
			name: "check-config --help", args: []string{"check-config", "--help"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall check-config [--config FILE]", "-config file",
				"RECALL_CONFIG", "RECALL_LISTEN             127.0.0.1:8080", "RECALL_UPSTREAM_URL       https://api.openai.com/v1",
				"RECALL_UPSTREAM_PROTOCOL  openai", "RECALL_DATA_DIR           ./recall-data", "RECALL_STORE_URL", "RECALL_REPLICA_URL", "RECALL_ADMIN_KEY"},
		},
		{
			name: "health --help", args: []string{"health", "--help"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall health [--addr URL]", "-addr URL", "-timeout duration", "RECALL_ADDR", "RECALL_LISTEN", `(default "http://127.0.0.1:8080")`},
		},
		{
			name: "health --help shows the address from the environment", args: []string{"health", "-h"}, code: 0,
			env:    map[string]string{"RECALL_LISTEN": "0.0.0.0:9123"},
			stdout: []string{`(default "http://127.0.0.1:9123")`},
		},
		{name: "version --help", args: []string{"version", "--help"}, code: 0, stdout: []string{"usage: recall version"}, quietErr: true},
		{name: "help serve", args: []string{"help", "serve"}, code: 0, stdout: []string{"usage: recall serve"}, quietErr: true},
		{name: "bad flag", args: []string{"serve", "--listen", "x"}, code: 2, stderr: []string{"recall serve: flag provided but not defined: -listen"}, quietOut: true},
		{name: "stray argument", args: []string{"check-config", "recall.yaml"}, code: 2, stderr: []string{`recall check-config: unexpected argument "recall.yaml"`}, quietOut: true},

		{name: "version stamped", args: []string{"version"}, version: "v1.2.3-4-gabcdef", code: 0, stdout: []string{"recall v1.2.3-4-gabcdef\n"}, quietErr: true, stdoutLine: true},
		{name: "version unstamped", args: []string{"version"}, code: 0, stdout: []string{"recall dev"}, quietErr: true, stdoutLine: true},

		{
			name: "check-config without a file", args: []string{"check-config"}, code: 0, quietErr: true,
			stdout: []string{"# global: (no file: defaults and environment)", "base_url: https://api.openai.com/v1"},
		},
		{
			name: "check-config warns about a base URL without a version", args: []string{"check-config"}, code: 0,
			env:    map[string]string{"RECALL_UPSTREAM_URL": "http://127.0.0.1:9801"},
			stdout: []string{"base_url: http://127.0.0.1:9801"},
			stderr: []string{`recall: warning: RECALL_UPSTREAM_URL: "http://127.0.0.1:9801" does not end in an API version such as /v1`},
		},
		{
			name: "check-config names a bad RECALL_UPSTREAM_URL", args: []string{"check-config"}, code: 1, quietOut: true,
			env:    map[string]string{"RECALL_UPSTREAM_URL": "ht!tp://x"},
			stderr: []string{`recall: RECALL_UPSTREAM_URL: "ht!tp://x": must be an absolute http:// or https:// URL`},
		},
		{
			name: "check-config lists every problem of every file", args: []string{"check-config", "--config", bad}, code: 1, quietOut: true,
			stderr: []string{
				"recall: 6 problems:\n",
				"bad.yaml: admin_key: environment variable NOPE_ADMIN is not set (line 2)\n",
				"bad.yaml: cache_mb: want an integer, got a string (line 3)\n",
				"a.yaml: api_keys[0]: environment variable NOPE_A is not set (line 2)\n",
				"a.yaml: history.budget_tokens: environment variable NOPE_BUDGET is not set (line 4)\n",
				"a.yaml: history.max_turns: must be >= 0, got -1\n",
				"b.yaml: upstream.api_key: environment variable NOPE_B is not set (line 4)\n",
			},
		},
		{
			name: "check-config reads RECALL_CONFIG", args: []string{"check-config"}, code: 1, quietOut: true,
			env:    map[string]string{"RECALL_CONFIG": bad},
			stderr: []string{"recall: 6 problems:"},
		},
		{
			name: "serve refuses a bad configuration before listening", args: []string{"serve"}, code: 1, quietOut: true,
			env:       map[string]string{"RECALL_LISTEN": "nope", "RECALL_STORE_URL": "mysql://u:hunter2@db/recall"},
			stderr:    []string{"recall: 2 problems:", `RECALL_LISTEN: "nope": want host:port`, `RECALL_STORE_URL: "mysql://u:xxxxx@db/recall": want postgres://`},
			notStderr: []string{"hunter2"},
		},

		{
			name: "health: ready", args: []string{"health", "--addr", ready.URL}, code: 0, quietErr: true, stdoutLine: true,
			stdout: []string{"recall health: ready: " + ready.URL + "/readyz answered 200"},
		},
		{
			name: "health: RECALL_ADDR", args: []string{"health"}, code: 0, quietErr: true,
			env:    map[string]string{"RECALL_ADDR": ready.URL + "/"},
			stdout: []string{"ready: " + ready.URL + "/readyz answered 200"},
		},
		{
			name: "health: RECALL_LISTEN on every interface is checked on loopback", args: []string{"health"}, code: 0, quietErr: true,
			env:    map[string]string{"RECALL_LISTEN": "0.0.0.0:" + port(t, ready.URL)},
			stdout: []string{"ready: http://127.0.0.1:" + port(t, ready.URL) + "/readyz answered 200"},
		},
		{
			name: "health: not ready", args: []string{"health", "--addr", draining.URL}, code: 1, quietOut: true,
			stderr: []string{"recall health: not ready: " + draining.URL + "/readyz answered 503 {\"status\": \"shutting down\"}\n"},
		},
		{
			name: "health: nothing listening", args: []string{"health", "--addr", "http://" + closed}, code: 1, quietOut: true,
			stderr: []string{"recall health: not ready: ", "connection refused"},
		},
		{
			name: "health: not a URL", args: []string{"health", "--addr", "127.0.0.1:8080"}, code: 2, quietOut: true,
			stderr: []string{`recall health: --addr must be an http:// or https:// URL, got "127.0.0.1:8080"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range cliEnv {
				t.Setenv(k, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			saved := version
			version = tt.version
			defer func() { version = saved }()

			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code: got %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, &stdout, &stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout: got\n%s\nwant it to contain %q", &stdout, s)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr: got\n%s\nwant it to contain %q", &stderr, s)
				}
			}
			for _, s := range tt.notStderr {
				if strings.Contains(stderr.String(), s) {
					t.Errorf("stderr: got\n%s\nwant no %q", &stderr, s)
				}
			}
			if tt.quietOut && stdout.Len() > 0 {
				t.Errorf("stdout: got\n%s\nwant nothing", &stdout)
			}
			if tt.quietErr && stderr.Len() > 0 {
				t.Errorf("stderr: got\n%s\nwant nothing", &stderr)
			}
			if tt.stdoutLine && strings.Count(stdout.String(), "\n") != 1 {
				t.Errorf("stdout: got %q, want exactly one line", &stdout)
			}
		})
	}
}

func TestAddrFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"nothing set", nil, "http://127.0.0.1:8080"},
		{"RECALL_ADDR wins", map[string]string{"RECALL_ADDR": "http://recall:1", "RECALL_LISTEN": "0.0.0.0:2"}, "http://recall:1"},
		{"listen on every IPv4 interface", map[string]string{"RECALL_LISTEN": "0.0.0.0:9000"}, "http://127.0.0.1:9000"},
		{"listen on every interface", map[string]string{"RECALL_LISTEN": ":9000"}, "http://127.0.0.1:9000"},
		{"listen on every IPv6 interface", map[string]string{"RECALL_LISTEN": "[::]:9000"}, "http://[::1]:9000"},
		{"listen on a host", map[string]string{"RECALL_LISTEN": "10.0.0.5:9000"}, "http://10.0.0.5:9000"},
		{"listen not host:port", map[string]string{"RECALL_LISTEN": "nope"}, "http://127.0.0.1:8080"},
		{"empty values are unset", map[string]string{"RECALL_ADDR": "", "RECALL_LISTEN": ""}, "http://127.0.0.1:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := addrFromEnv(lookup); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// writeConfig writes content to dir/name, making dir, and returns the path.
func writeConfig(t *testing.T, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// port returns the port of an http://host:port URL.
func port(t *testing.T, u string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
