package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestMessagesCacheSlotsStayWithinFour: Anthropic takes at most four
// cache_control breakpoints per request, and a top-level cache_control
// (automatic caching) takes one of them. A Messages client that uses it
// with three block breakpoints of its own has taken all four: Recall sends
// the stored history without its breakpoint on the history's end, and the
// strict fake upstream, which refuses a fifth, answers. With two block
// breakpoints the last slot is free, and Recall's breakpoint takes it.
func TestMessagesCacheSlotsStayWithinFour(t *testing.T) {
	const cc = `"cache_control":{"type":"ephemeral"}`
	tests := []struct {
		name   string
		blocks int  // the client's block breakpoints, besides its top-level one
		marked bool // whether the history's end carries Recall's breakpoint
	}{
		{"three block breakpoints leave no slot", 3, false},
		{"two block breakpoints leave Recall one", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := e2etest.New(t, threeUpstreams())
			conv := "slots-" + strconv.Itoa(tt.blocks)
			headers := map[string]string{"Content-Type": "application/json", "X-Api-Key": "rk-an",
				"Anthropic-Version": "2023-06-01", "X-Conversation-ID": conv}
			first := `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"first question"}]}`
			if r := h.PostHeaders("/v1/messages", headers, first); r.Status != 200 {
				t.Fatalf("first turn: status %d: %s", r.Status, r.Body)
			}
			h.WaitDone(conv)

			newest := `{"type":"text","text":"second question"}`
			if tt.blocks == 3 {
				newest = `{"type":"text","text":"second question",` + cc + `}`
			}
			second := `{"model":"claude-sonnet-4-5","max_tokens":100,` + cc + `,` +
				`"system":[{"type":"text","text":"Be brief.",` + cc + `}],` +
				`"tools":[{"name":"lookup","description":"looks up","input_schema":{"type":"object","properties":{}},` + cc + `}],` +
				`"messages":[{"role":"user","content":[` + newest + `]}]}`
			r := h.PostHeaders("/v1/messages", headers, second)
			if r.Status != 200 {
				t.Fatalf("second turn: got status %d %s, want 200", r.Status, r.Body)
			}
			h.WaitDone(conv)

			up := h.Up.Last().Body
			if n := strings.Count(string(up), `"cache_control"`); n != 4 {
				t.Errorf("upstream request: got %d cache_control members, want 4 (the client's %d and the top-level one, then Recall's if a slot is left): %s",
					n, tt.blocks, up)
			}
			if !gjson.GetBytes(up, "cache_control").Exists() {
				t.Errorf("upstream request: got no top-level cache_control, want the client's kept: %s", up)
			}
			msgs := gjsonArray(up, "messages")
			if len(msgs) != 3 {
				t.Fatalf("upstream request: got %d messages, want 3 (the stored turn, then the new question): %s", len(msgs), up)
			}
			if got := strings.Contains(string(msgs[1]), `"cache_control"`); got != tt.marked {
				t.Errorf("history's end %s: got marked %v, want %v", msgs[1], got, tt.marked)
			}
		})
	}
}
