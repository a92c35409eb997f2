package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
)

// An upstream answer larger than MaxResponseBytes is its own failure, a
// 502 upstream_response_too_large (an error event once a stream has
// begun), not an unreachable upstream; nothing is stored.
func TestOversizedAnswerIsTooLarge(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("0123456789abcdef", 2*limit/16)
	for _, tc := range []struct {
		name   string
		conv   string
		stream bool
		reply  upstreamtest.Reply
	}{
		{name: "body", conv: "big-body", reply: upstreamtest.Reply{Content: big}},
		{name: "body without a conversation", reply: upstreamtest.Reply{Content: big}},
		{name: "gzip body under the bound, decoded over it", conv: "big-gzip", reply: upstreamtest.Reply{Content: big, Gzip: true}},
		{name: "one streamed event", conv: "big-event", stream: true, reply: upstreamtest.Reply{Content: big, Chunks: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{Proxy: func(c *proxy.Config) { c.MaxResponseBytes = limit }})
			h.Up.Enqueue(tc.reply)
			resp := h.send(key, tc.conv, e2etest.ChatBody("a big answer", tc.stream))
			body := readAll(t, resp)
			if tc.stream {
				events := strings.Split(strings.TrimSpace(body), "\n\n")
				checkErrorShape(t, []byte(strings.TrimPrefix(events[len(events)-1], "data: ")), "upstream_error", "upstream_response_too_large")
			} else {
				if resp.StatusCode != 502 {
					t.Errorf("got status %d, want 502", resp.StatusCode)
				}
				checkErrorShape(t, []byte(body), "upstream_error", "upstream_response_too_large")
			}
			if d := h.WaitDone(tc.conv); d.Committed || d.Status != 502 {
				t.Fatalf("got %+v, want an uncommitted exchange with status 502", d)
			}
			if tc.conv != "" {
				if got := h.Stored(h.PassNamespace(key), tc.conv); len(got) != 0 {
					t.Errorf("stored %d messages, want none", len(got))
				}
			}
		})
	}
}
