package proxy_test

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// SSE lines may end in CR, LF or CRLF: a recorded stream in any of them is
// relayed byte for byte and committed.
func TestStreamLineEndings(t *testing.T) {
	for _, tc := range []struct{ name, ending string }{{"cr", "\r"}, {"crlf", "\r\n"}, {"lf", "\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			conv := "endings-" + tc.name
			h.up.Enqueue(upstreamtest.Reply{Content: "line one\nline two", LineEnding: tc.ending})
			body := readAll(t, h.send(key, conv, chatBody("question", true)))
			if want := "data: [DONE]" + tc.ending + tc.ending; !strings.HasSuffix(body, want) || strings.Contains(body, `"error"`) {
				t.Errorf("got stream %q, want it relayed as sent, ending in %q", body, want)
			}
			if d := h.waitDone(conv); !d.Committed || d.Err != nil {
				t.Fatalf("got %+v, want a committed turn", d)
			}
			want := []string{"user:question", "assistant:line one\nline two"}
			if got := active(h.stored(h.passNamespace(key), conv)); !equalStrings(got, want) {
				t.Errorf("stored %q, want %q", got, want)
			}
		})
	}
}
