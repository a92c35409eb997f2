package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// An open row's queued p99 is the wait from when a request was due to
// when a worker sent it; a closed row has none.
func TestQueuedP99(t *testing.T) {
	t0 := time.Now()
	var samples []sample
	for i := range 100 {
		due := t0.Add(time.Duration(i) * time.Millisecond)
		wait := time.Duration(0)
		if i >= 98 {
			wait = 40 * time.Millisecond
		}
		samples = append(samples, sample{total: wait + 2*time.Millisecond, due: due, sent: due.Add(wait)})
	}
	open := summarise(options{rate: 1000}, samples, time.Second)
	if open.QueuedP99 != 40 {
		t.Errorf("open loop queued p99 = %v ms, want 40 (2 of 100 waited 40 ms)", open.QueuedP99)
	}
	if !strings.Contains(open.human(), "queued p99 40.00 ms") {
		t.Errorf("the row's line lacks its queued p99: %s", open.human())
	}
	closed := summarise(options{concurrency: 32}, samples, time.Second)
	if closed.QueuedP99 != 0 || strings.Contains(closed.human(), "queued") {
		t.Errorf("closed loop: queued p99 %v, line %s; want none", closed.QueuedP99, closed.human())
	}
}
