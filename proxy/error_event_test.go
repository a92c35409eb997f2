package proxy_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// An upstream that fails mid-stream with its own error event: the client
// gets that event once, and no second error event of Recall's after it.
// Nothing is stored.
func TestUpstreamErrorEventIsTheOnlyErrorEvent(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	conv := "error-event"
	h.Up.Enqueue(upstreamtest.Reply{Content: "one two three four five six", Chunks: 8, Fault: upstreamtest.FaultErrorEvent})
	body := readAll(t, h.send(key, conv, e2etest.ChatBody("question", true)))
	var errs []string
	for _, ev := range strings.Split(strings.TrimSpace(body), "\n\n") {
		if data := strings.TrimPrefix(ev, "data: "); gjson.Get(data, "error").Exists() {
			errs = append(errs, gjson.Get(data, "error.code").Str)
		}
	}
	if len(errs) != 1 || errs[0] != upstreamtest.ErrorEventCode {
		t.Errorf("got error events with codes %q, want exactly one, the upstream's %q", errs, upstreamtest.ErrorEventCode)
	}
	if d := h.WaitDone(conv); d.Committed || d.Status != 502 {
		t.Fatalf("got %+v, want an uncommitted exchange with status 502", d)
	}
	if got := h.Stored(h.PassNamespace(key), conv); len(got) != 0 {
		t.Errorf("stored %d messages, want none", len(got))
	}
}
