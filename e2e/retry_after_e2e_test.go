package e2e

import (
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestATranslatedRateLimitKeepsRetryAfter: an upstream's 429 answered to
// a client of another protocol (a Messages client over an OpenAI
// upstream) keeps the upstream's Retry-After, which the client's SDK
// waits by.
func TestATranslatedRateLimitKeepsRetryAfter(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	h.Up.Enqueue(upstreamtest.Reply{Status: 429, RetryAfter: "7"})
	r := h.PostHeaders("/v1/messages", map[string]string{"x-api-key": "rk-oa", "anthropic-version": "2023-06-01",
		"Content-Type": "application/json", "X-Conversation-ID": "rl-1"},
		`{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 429 || r.Header.Get("Retry-After") != "7" {
		t.Errorf("got %d with Retry-After %q: %s; want 429 with the upstream's 7", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
}
