package main

import (
	"net/http"
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestDurableLogSyncsObserved: `recall serve` on its defaults (Badger,
// durable writes through AIO) observes each log sync that made a turn
// durable in recall_store_duration_seconds{op="sync"}, by the time the
// turn is answered.
func TestDurableLogSyncsObserved(t *testing.T) {
	up := upstreamtest.NewTB(t)
	c := newChild(t, t.TempDir(), up.URL())
	c.start()
	defer stopChild(t, c)
	const series = `recall_store_duration_seconds_count{op="sync"}`
	if n, _ := metric(t, c, series); n != 0 {
		t.Fatalf("%s = %v before any turn", series, n)
	}
	client := &http.Client{}
	for i := range 2 {
		if _, err := exchange(client, c.url(), "synced", []msg{clientMsg(msg{role: "user", content: "hello"})}, i == 1); err != nil {
			t.Fatal(err)
		}
		if n, ok := metric(t, c, series); !ok || n < float64(i+1) {
			t.Fatalf("after turn %d: %s = %v (present %v), want at least %d", i+1, series, n, ok, i+1)
		}
	}
}
