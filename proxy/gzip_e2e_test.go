package proxy_test

import (
	"context"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

func TestCompressedAnswersAreRecordedAndRelayedAsSent(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			c := h.Client(key, "gz-"+name)
			ctx := context.Background()
			h.Up.Enqueue(upstreamtest.Reply{Content: "compressed hello", Gzip: true})
			var got string
			if stream {
				acc := e2etest.StreamChat(t, c, e2etest.ChatParams(openai.UserMessage("hi")))
				got = acc.Choices[0].Message.Content
			} else {
				resp, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage("hi")))
				if err != nil {
					t.Fatal(err)
				}
				got = resp.Choices[0].Message.Content
			}
			if got != "compressed hello" {
				t.Errorf("client got %q", got)
			}
			if enc := h.Up.Last().Header.Get("Accept-Encoding"); enc != "gzip" {
				t.Fatalf("client's Accept-Encoding not forwarded: %q", enc)
			}
			if d := h.WaitDone("gz-" + name); !d.Committed {
				t.Fatalf("not committed: %v", d.Err)
			}
			stored := e2etest.Active(h.Stored(h.PassNamespace(key), "gz-"+name))
			if want := []string{"user:hi", "assistant:compressed hello"}; !slices.Equal(stored, want) {
				t.Errorf("stored %q, want %q", stored, want)
			}
		})
	}
}
