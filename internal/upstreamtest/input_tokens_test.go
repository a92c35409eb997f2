package upstreamtest_test

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// A reply's InputTokens is the input count its usage reports, on the
// Messages and Responses routes, streamed or not (a context near full,
// which makes an agent compact its own); the next answer counts again.
func TestReplyInputTokens(t *testing.T) {
	s := upstreamtest.NewTB(t)
	ctx := context.Background()

	c := sdkClient(s)
	s.Enqueue(upstreamtest.Reply{InputTokens: 190000})
	m, err := c.Messages.New(ctx, userParams("nearly full"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Usage.InputTokens + m.Usage.CacheReadInputTokens; got != 190000 {
		t.Errorf("messages: got %d input tokens, want 190000", got)
	}
	s.Enqueue(upstreamtest.Reply{InputTokens: 180000})
	stream := c.Messages.NewStreaming(ctx, userParams("nearly full, streamed"))
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Usage.InputTokens + acc.Usage.CacheReadInputTokens; got != 180000 {
		t.Errorf("messages streamed: got %d input tokens, want 180000", got)
	}
	if m, err = c.Messages.New(ctx, userParams("counted again")); err != nil {
		t.Fatal(err)
	} else if m.Usage.InputTokens > 1000 {
		t.Errorf("messages after: got %d input tokens, want the fake's estimate", m.Usage.InputTokens)
	}

	rc := openai.NewClient(option.WithBaseURL(s.URL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
	s.Enqueue(upstreamtest.Reply{InputTokens: 250000})
	r, err := rc.Responses.New(ctx, responses.ResponseNewParams{
		Model: "gpt-4o-mini", Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("nearly full")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.InputTokens != 250000 || r.Usage.TotalTokens <= 250000 {
		t.Errorf("responses: got usage %+v, want 250000 input tokens", r.Usage)
	}
}
