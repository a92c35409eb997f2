package main

import (
	"os"
	"path/filepath"
	"strconv"
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

// The pairs group's slices make one row a target: the median over the
// rounds of the row's figure over the baseline slice's beside it, with
// the range, named by the row (a protocol against recall-sync's chat row,
// or one of pairTargets), and no rows of their own in the tables by
// target.
func TestPairsTable(t *testing.T) {
	line := func(label string, rps, cpu float64) string {
		return `{"label":"` + label + `","mode":"closed","rps":` + strconv.FormatFloat(rps, 'f', -1, 64) +
			`,"proxy_cpu_ms_per_req":` + strconv.FormatFloat(cpu, 'f', -1, 64) + "}\n"
	}
	var lines strings.Builder
	// Three rounds: the machine's speed halves in the second, the ratio
	// does not move with it.
	for i, speed := range []float64{1, 0.5, 1} {
		round := strconv.Itoa(i + 1)
		for _, row := range []string{"responses", "pg-2", "sync-2", "pg-apart", "durable-ctx50"} {
			lines.WriteString(line("pairs-"+row+"/"+round+"/base/plain", 4000*speed, 0.25/speed))
			lines.WriteString(line("pairs-"+row+"/"+round+"/row/plain", 3600*speed+float64(i)*40, 0.30/speed))
			lines.WriteString(line("pairs-"+row+"/"+round+"/base/stream", 3000*speed, 0.30/speed))
			lines.WriteString(line("pairs-"+row+"/"+round+"/row/stream", 2700*speed, 0.33/speed))
		}
	}
	out := reportOf(t, lines.String())
	for _, want := range []string{
		"| recall-sync-responses | recall-sync | 3 | 0.92 (0.90-0.92) | 0.90 (0.90-0.90) | 1.20 (1.20-1.20) | 1.10 (1.10-1.10) |",
		"| recall-pg-2 | recall-pg | 3 | 0.92 (0.90-0.92) | 0.90 (0.90-0.90) | 1.20 (1.20-1.20) | 1.10 (1.10-1.10) |",
		"| recall-sync-2 | recall-sync | 3 | 0.92 (0.90-0.92) | 0.90 (0.90-0.90) | 1.20 (1.20-1.20) | 1.10 (1.10-1.10) |",
		"| recall-pg-apart | recall-pg | 3 | 0.92 (0.90-0.92) | 0.90 (0.90-0.90) | 1.20 (1.20-1.20) | 1.10 (1.10-1.10) |",
		"| floor-durable-ctx50 | nginx-ctx50 | 3 | 0.92 (0.90-0.92) | 0.90 (0.90-0.90) | 1.20 (1.20-1.20) | 1.10 (1.10-1.10) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the pairs table lacks\n%s\nin:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| pairs-") {
		t.Errorf("a table by target has a row of the pairs' slices:\n%s", out)
	}
	if out := reportOf(t, line("recall-sync/plain/closed", 3000, 0.3)); strings.Contains(out, "Pairs") {
		t.Errorf("a run without pairs has their table:\n%s", out)
	}
}

func TestMedianRange(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want string
	}{
		{nil, "–"},
		{[]float64{1.5}, "1.50 (1.50-1.50)"},
		{[]float64{0.9, 0.7, 1.2}, "0.90 (0.70-1.20)"},
		{[]float64{1, 0.8, 0.9, 2}, "0.95 (0.80-2.00)"},
	} {
		if got := medianRange(c.in); got != c.want {
			t.Errorf("medianRange(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
