package upstreamtest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
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

// A summariser call's answer is capped by max_completion_tokens (or the
// older max_tokens), unless the server runs on past its limit
// (WithUnboundedSummaries).
func TestSummaryAnswerHonoursTheRequestLimit(t *testing.T) {
	items := strings.Repeat("user: an item of the transcript\n", 200) // ~6400 bytes of items
	for _, tc := range []struct {
		name     string
		opts     []Option
		limit    string
		maxBytes int
	}{
		{"max_completion_tokens", nil, `"max_completion_tokens":50`, 200},
		{"max_tokens", nil, `"max_tokens":50`, 200},
		{"unbounded", []Option{WithUnboundedSummaries()}, `"max_completion_tokens":50`, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewTB(t, tc.opts...)
			body := `{"model":"m","messages":[{"role":"system","content":"Write the running summary."},` +
				`{"role":"user","content":"Transcript of the turns to add:\n` + strings.ReplaceAll(items, "\n", `\n`) + `"}],` + tc.limit + `}`
			resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			got := gjson.GetBytes(raw, "choices.0.message.content").Str
			if resp.StatusCode != 200 || got == "" {
				t.Fatalf("status %d, body %s", resp.StatusCode, raw)
			}
			if len(got) > tc.maxBytes {
				t.Errorf("answer of %d bytes, want at most %d", len(got), tc.maxBytes)
			}
			if tc.opts != nil && len(got) < 4000 {
				t.Errorf("unbounded answer of %d bytes, want every item (about 6000)", len(got))
			}
		})
	}
}
