package proxy_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

func TestCompressedAnswersAreRecordedAndRelayedAsSent(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			c := h.client(key, "gz-"+name)
			ctx := context.Background()
			h.up.Enqueue(upstreamtest.Reply{Content: "compressed hello", Gzip: true})
			var got string
			if stream {
				s := c.Chat.Completions.NewStreaming(ctx, params(openai.UserMessage("hi")))
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				got = acc.Choices[0].Message.Content
			} else {
				resp, err := c.Chat.Completions.New(ctx, params(openai.UserMessage("hi")))
				if err != nil {
					t.Fatal(err)
				}
				got = resp.Choices[0].Message.Content
			}
			if got != "compressed hello" {
				t.Errorf("client got %q", got)
			}
			if enc := h.up.Last().Header.Get("Accept-Encoding"); enc != "gzip" {
				t.Fatalf("client's Accept-Encoding not forwarded: %q", enc)
			}
			if d := h.waitDone("gz-" + name); !d.Committed {
				t.Fatalf("not committed: %v", d.Err)
			}
			stored := active(h.stored(h.passNamespace(key), "gz-"+name))
			if want := []string{"user:hi", "assistant:compressed hello"}; !equalStrings(stored, want) {
				t.Errorf("stored %q, want %q", stored, want)
			}
		})
	}
}
