package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -samples writes one line a request, in the order they were due, with
// due and sent times from the first one's due time, the latency, an
// error quoted as CSV quotes it (encoding/csv reads it back) and the due
// time in Unix milliseconds.
func TestWriteSamplesInDueOrder(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	samples := []sample{
		{due: t0.Add(2 * time.Millisecond), sent: t0.Add(40 * time.Millisecond), total: 45 * time.Millisecond},
		{due: t0, sent: t0.Add(500 * time.Microsecond), total: 1500 * time.Microsecond},
		{due: t0.Add(time.Millisecond), sent: t0.Add(time.Millisecond), err: errors.New(`Post "http://127.0.0.1:1/v1": refused`)},
	}
	path := filepath.Join(t.TempDir(), "samples.csv")
	if err := writeSamples(path, samples); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"due_ms,sent_ms,total_ms,error,due_unix_ms",
		"0.000,0.500,1.500,,1700000000000",
		`1.000,1.000,0.000,"Post ""http://127.0.0.1:1/v1"": refused",1700000000001`,
		"2.000,40.000,45.000,,1700000000002",
		"",
	}, "\n")
	if string(got) != want {
		t.Errorf("samples file:\n%s\nwant:\n%s", got, want)
	}
	rows, err := csv.NewReader(bytes.NewReader(got)).ReadAll()
	if err != nil || len(rows) != 4 || rows[2][3] != `Post "http://127.0.0.1:1/v1": refused` {
		t.Errorf("read back: %q, %v", rows, err)
	}
}
