package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env returns a lookup function over m: tests never touch the process
// environment.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// problemLines splits a joined error into its lines.
func problemLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// unwrapAll counts the problems joined in err.
func unwrapAll(err error) []error {
	var j interface{ Unwrap() []error }
	if errors.As(err, &j) {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// wantProblems checks that err joins one problem for each of lines, and
// that for each, some line of err contains every part.
func wantProblems(t *testing.T, err error, lines [][]string) {
	t.Helper()
	if got := len(unwrapAll(err)); got != len(lines) {
		t.Errorf("got %d problems, want %d:\n%v", got, len(lines), err)
	}
	for _, parts := range lines {
		if !containsLine(err, parts...) {
			t.Errorf("got\n%v\nwant a line containing %q", err, parts)
		}
	}
}

// containsLine reports whether some line of err contains every part.
func containsLine(err error, parts ...string) bool {
	for _, l := range problemLines(err) {
		all := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// globalWithTenants returns the default global configuration reading tenants
// from dir.
func globalWithTenants(dir string) Global {
	g := DefaultGlobal()
	g.TenantsDir = dir
	return g
}

// described returns check-config's description of g, with g's tenants
// (none read from the environment).
func described(t *testing.T, g Global) string {
	t.Helper()
	set, err := LoadTenants(g, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Describe(&out, g, set); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
