package main

import (
	"reflect"
	"strings"
	"testing"
)

const wrkOutput = `Running 10s test @ http://127.0.0.1:19806/v1/chat/completions
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.05ms  386.71us   9.55ms   72.54%
    Req/Sec    31.33k     1.23k   33.11k    79.00%
  Latency Distribution
     50%  812.00us
     75%    1.19ms
     90%    1.47ms
     99%    2.45ms
  311764 requests in 10.00s, 123.34MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:  31167.69
Transfer/sec:     12.33MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(strings.NewReader(wrkOutput), "wrk/recall", 32)
	if err != nil {
		t.Fatal(err)
	}
	want := result{Label: "wrk/recall", Mode: "closed", Concurrency: 32, Seconds: 10, Requests: 311764, Errors: 8,
		RPS: 31167.69, P50: 0.812, P90: 1.47, P99: 2.45, Max: 9.55}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	if _, err := parseWrk(strings.NewReader("unable to connect to 127.0.0.1:1 Connection refused\n"), "x", 1); err == nil {
		t.Error("output without a Requests/sec line parsed")
	}
	if d, err := wrkDuration("1.50m"); err != nil || d != 90_000 {
		t.Errorf("wrkDuration(1.50m) = %v, %v; want 90000 ms", d, err)
	}
}

// The report renders wrk's rows as the proxy-ceiling table, against nginx.
func TestReportCeiling(t *testing.T) {
	out := reportOf(t, `{"label":"wrk/nginx","mode":"closed","concurrency":32,"rps":30000,"p50_ms":1,"p90_ms":1.5,"p99_ms":2,"max_ms":9}
{"label":"wrk/recall-nohist","mode":"closed","concurrency":32,"rps":15000,"p50_ms":2,"p90_ms":3,"p99_ms":5,"max_ms":12,"errors":1}
`)
	for _, want := range []string{"**Proxy ceiling**", "| nginx | 30000 | 1.00 |", "| recall-nohist | 15000 | 0.50 | 2.00 | 3.00 | 5.00 | 12.00 | 1 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
