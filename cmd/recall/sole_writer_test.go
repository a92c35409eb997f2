package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// soleGauge reads recall_store_sole_writer from c's /metrics.
func soleGauge(t *testing.T, c *child) string {
	t.Helper()
	resp, err := http.Get(c.url() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "recall_store_sole_writer "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no recall_store_sole_writer in /metrics:\n%s", b)
	return ""
}

// TestSoleWriterGaugeAndLog: a replica alone on its PostgreSQL database
// reports it (recall_store_sole_writer 1, and a log line); a second
// replica is ready only after the first stopped serving its window cache
// alone (the gauge 0, and a log line).
func TestSoleWriterGaugeAndLog(t *testing.T) {
	url := pgtest.DB(t)
	up := upstreamtest.NewTB(t)
	cs := replicas(t, 1, url, up.URL())
	if got := soleGauge(t, cs[0]); got != "1" {
		t.Fatalf("alone: recall_store_sole_writer %s, want 1", got)
	}
	cs = append(cs, replicas(t, 1, url, up.URL())...)
	for i, want := range []string{"0", "0"} {
		if got := soleGauge(t, cs[i]); got != want {
			t.Errorf("two replicas: replica %d's recall_store_sole_writer %s, want %s", i, got, want)
		}
	}
	b, err := os.ReadFile(cs[0].logs.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the only replica on the database", "another replica shares the database"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the first replica's log has no %q:\n%s", want, b)
		}
	}
}
