package proxy_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// A client that stops reading must not hold its conversation past the
// exchange's deadline: the relay gives up, commits nothing, and the next
// request on the conversation goes through.
func TestStuckClientReleasesItsConversation(t *testing.T) {
	h := newHarness(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.Upstream.Timeout = config.Duration(time.Second)
	}})
	conv := "stuck-1"
	// Far more than the socket buffers hold, so the relay blocks on the client.
	h.Up.Enqueue(upstreamtest.Reply{Content: strings.Repeat("0123456789abcdef", 1<<20), Chunks: 256})
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := e2etest.ChatBody("a long answer, never read", true)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: recall\r\nAuthorization: Bearer %s\r\n"+
		"X-Conversation-ID: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", key, conv, len(body), body)

	if d := h.WaitDone(conv); d.Committed || d.Err == nil {
		t.Fatalf("got %+v, want an uncommitted exchange ended by its deadline", d)
	}
	if r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("are you there?", false)); r.Status != 200 {
		t.Fatalf("next request on the conversation: got %d %s", r.Status, r.Body)
	}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); len(got) != 2 {
		t.Errorf("stored %q, want only the second turn", got)
	}
}
