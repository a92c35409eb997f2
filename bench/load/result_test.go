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

// A table's header and its alignment row come from one list of columns.
func TestTableHead(t *testing.T) {
	var out strings.Builder
	tableHead(&out, "**Title**", "lrl", "target", "req/s", "history")
	want := "\n**Title**\n\n| target | req/s | history |\n| --- | ---: | --- |\n"
	if got := out.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("got no panic for two alignments of three columns, want one")
		}
	}()
	tableHead(&out, "**Title**", "lr", "target", "req/s", "history")
}
