package proxy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// SSE lines may end in CR, LF or CRLF: a recorded stream in any of them is
// relayed byte for byte and committed.
func TestStreamLineEndings(t *testing.T) {
	for _, tc := range []struct{ name, ending string }{{"cr", "\r"}, {"crlf", "\r\n"}, {"lf", "\n"}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conv := "endings-" + tc.name
			h.Up.Enqueue(upstreamtest.Reply{Content: "line one\nline two", LineEnding: tc.ending})
			body := readAll(t, h.send(key, conv, e2etest.ChatBody("question", true)))
			if want := "data: [DONE]" + tc.ending + tc.ending; !strings.HasSuffix(body, want) || strings.Contains(body, `"error"`) {
				t.Errorf("got stream %q, want it relayed as sent, ending in %q", body, want)
			}
			if d := h.WaitDone(conv); !d.Committed || d.Err != nil {
				t.Fatalf("got %+v, want a committed turn", d)
			}
			want := []string{"user:question", "assistant:line one\nline two"}
			if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, want) {
				t.Errorf("stored %q, want %q", got, want)
			}
		})
	}
}
