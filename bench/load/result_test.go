package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportOf is the report of a results file holding lines (JSON, one
// result a line).
func reportOf(t *testing.T, lines string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := report(&out, path); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
