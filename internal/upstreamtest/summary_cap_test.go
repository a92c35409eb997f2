package upstreamtest

import (
	"strings"
	"testing"
)

// A summary answer stays within the call's max_tokens, as a model's does:
// the oldest items go, the title and the newest stay.
func TestCapSummaryKeepsTheNewestWithinMaxTokens(t *testing.T) {
	long := "Title: Talk about the weather today\n\n" + strings.Repeat("an old item; ", 200) + "the newest item"
	got := CapSummary(long, 50)
	if len(got) > 200 || !strings.HasPrefix(got, "Title: Talk about the weather today\n\n") || !strings.HasSuffix(got, "the newest item") {
		t.Errorf("capped to 50 tokens: %d bytes %q", len(got), got)
	}
	if short := "a; b"; CapSummary(short, 50) != short || CapSummary(long, 0) != long {
		t.Error("a summary within the cap, or with no cap, changed")
	}
}
