package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestDeletedSourcesLeaveNoCopyThroughHistoryTools: the model reads a
// conversation holding a passport number through get_conversation and
// search_conversations; the caller's turn is answered with it, and its
// stored turn keeps a note of what the tools read, not the text. Once
// the source is deleted the number is nowhere: not in the caller's
// stored messages, not in the tenant's search, not in the caller's next
// upstream request.
func TestDeletedSourcesLeaveNoCopyThroughHistoryTools(t *testing.T) {
	const secret = "PASSPORT-X7731Q"
	h := toolsHarness(t, "3")
	h.Say("rk-acme-1", "source", "my passport number is "+secret)
	h.Up.Enqueue(
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("get_conversation", `{"conversation_id":"source"}`)}},
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"passport"}`)}},
		upstreamtest.Reply{Content: "Found it."},
	)
	before := len(h.Up.Requests())
	r := h.Post("/v1/chat/completions", "rk-acme-1", "caller", `{"model":"gpt-4o","messages":[{"role":"user","content":"what is my passport number?"}]}`)
	h.WaitDone("caller")
	if r.Status != 200 {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	reqs := h.Up.Requests()[before:]
	if len(reqs) != 3 || !strings.Contains(string(reqs[1].Body), secret) || !strings.Contains(string(reqs[2].Body), secret) {
		t.Fatalf("the rounds: %d upstream requests; want the tools' results, with the number, in rounds 2 and 3", len(reqs))
	}
	for _, m := range h.Stored("acme", "caller") {
		if strings.Contains(string(m.Raw), secret) {
			t.Errorf("the caller stored the source's text: %s", m.Raw)
		}
	}

	if a := h.API("rk-acme-1", "", "DELETE", "/recall/v1/conversations/source", ""); a.Status != 200 {
		t.Fatalf("delete: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-acme-1", "", "GET", "/recall/v1/conversations/caller/messages?limit=100", ""); a.Status != 200 || strings.Contains(string(a.Body), secret) {
		t.Errorf("the caller's messages after the source's delete: %d %s", a.Status, a.Body)
	}
	if a := h.API("rk-acme-1", "", "GET", "/recall/v1/search?q=X7731Q", ""); a.Status != 200 || gjson.GetBytes(a.Body, "data.#").Int() != 0 {
		t.Errorf("search for the number after the delete: %d %s, want no hit", a.Status, a.Body)
	}
	h.Say("rk-acme-1", "caller", "thanks")
	if body := string(h.Up.Last().Body); strings.Contains(body, secret) {
		t.Errorf("the caller's next upstream request carries the deleted text: %.500s", body)
	}
}
