package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// -cold-start asks until the server answers, in the first conversation,
// and counts from the given start, not from its own.
func TestColdStartWaitsForTheFirstAnswer(t *testing.T) {
	var calls atomic.Int32
	var conv atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 { // not ready yet
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		conv.Store(r.Header.Get("X-Conversation-ID"))
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	started := time.Now().Add(-time.Second)
	o := options{url: srv.URL, protocol: "chat", key: "k", model: "m", words: 3, concurrency: 1, conversations: 10, convPrefix: "bench-", label: "cold"}
	res, err := coldStart(o, started)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 4 || calls.Load() != 4 {
		t.Errorf("got %d attempts (%d calls), want 4: three refused, one answered", res.Requests, calls.Load())
	}
	if res.ColdStartMs < 1000 {
		t.Errorf("cold start %.1f ms, want it counted from the start a second ago", res.ColdStartMs)
	}
	if got := conv.Load(); got != "bench-0" {
		t.Errorf("asked in conversation %v, want bench-0", got)
	}
	if res.Label != "cold" || res.Mode != "cold" {
		t.Errorf("label %q mode %q", res.Label, res.Mode)
	}
}

// The report's protocol matrix sets each API's rows beside recall-sync's,
// with the native rows' peak RSS and cold start; a missing row is a dash.
func TestReportProtocolMatrix(t *testing.T) {
	out := reportOf(t, `{"label":"coldstart/recall-sync","mode":"cold","cold_start_ms":212.4}
{"label":"recall-sync/plain/closed","mode":"closed","conversations":1000,"rps":2000}
{"label":"recall-sync/stream/closed","mode":"closed","conversations":1000,"stream":true,"rps":1000,"peak_rss_mib":180}
{"label":"coldstart/recall-sync-responses","mode":"cold","cold_start_ms":150}
{"label":"recall-sync-responses/plain/closed","mode":"closed","conversations":1000,"rps":1800}
{"label":"recall-sync-responses/stream/closed","mode":"closed","conversations":1000,"stream":true,"rps":950,"peak_rss_mib":200.4}
{"label":"recall-sync-responses-bridged/plain/closed","mode":"closed","conversations":1000,"rps":1000}
{"label":"recall-sync-responses-bridged/stream/closed","mode":"closed","conversations":1000,"stream":true,"rps":500}
`)
	for _, want := range []string{
		"| chat completions | 2000 / 1000 | 1.00 / 1.00 | – | – | 180 | 212 |",
		"| Responses | 1800 / 950 | 0.90 / 0.95 | 1000 / 500 | 0.50 / 0.50 | 200 | 150 |",
		"| Gemini | – | – | – | – | – | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
