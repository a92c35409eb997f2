package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliEnv lists every variable the commands read; each test starts with all
// of them empty (which the commands treat as unset), whatever the
// environment the tests run in.
var cliEnv = []string{"RECALL_CONFIG", "RECALL_LISTEN", "RECALL_UPSTREAM_URL", "RECALL_DATA_DIR",
	"RECALL_STORE_URL", "RECALL_ADMIN_KEY"}

func TestCLI(t *testing.T) {
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
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"serve", "check-config", "version"}, quietErr: true},
		{
			name: "serve --help", args: []string{"serve", "--help"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall serve [--config FILE]", "-config file",
				"RECALL_CONFIG", "RECALL_LISTEN        127.0.0.1:8080", "RECALL_UPSTREAM_URL  https://api.openai.com/v1",
				"RECALL_DATA_DIR      ./recall-data", "RECALL_STORE_URL", "RECALL_ADMIN_KEY"},
		},
		{
			name: "serve -h", args: []string{"serve", "-h"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall serve", "RECALL_LISTEN"},
		},
		{
			name: "check-config --help", args: []string{"check-config", "--help"}, code: 0, quietErr: true,
			stdout: []string{"usage: recall check-config [--config FILE]", "-config file",
				"RECALL_CONFIG", "RECALL_LISTEN        127.0.0.1:8080", "RECALL_UPSTREAM_URL  https://api.openai.com/v1",
				"RECALL_DATA_DIR      ./recall-data", "RECALL_STORE_URL", "RECALL_ADMIN_KEY"},
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
			env:       map[string]string{"RECALL_LISTEN": "nope", "RECALL_STORE_URL": "postgres://u:hunter2@db/recall"},
			stderr:    []string{"recall: 2 problems:", `RECALL_LISTEN: "nope": want host:port`, "RECALL_STORE_URL: this build stores only"},
			notStderr: []string{"hunter2"},
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

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
