package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// toolsHarness serves tenant acme (key rk-acme-1) with every history tool
// and rounds tool_rounds, over the fake upstream (OpenAI's kind: chat and
// Responses go as they came, Messages as chat completions).
func toolsHarness(t *testing.T, rounds string) *e2etest.Harness {
	return e2etest.New(t, e2etest.Options{Tenants: toolsTenant(rounds)})
}

// toolsTenant is tenant acme (key rk-acme-1) with every history tool and
// rounds tool_rounds, over the fake upstream.
func toolsTenant(rounds string) map[string]string {
	return map[string]string{"acme.yaml": `id: acme
api_keys: ["rk-acme-1"]
upstream:
  base_url: "{{UPSTREAM}}"
  api_key: "sk-up"
history:
  tools: [end_conversation, get_conversation, search_conversations]
  tool_rounds: ` + rounds + `
`}
}

func toolCall(name, args string) upstreamtest.ToolCall {
	return upstreamtest.ToolCall{Name: name, Arguments: args}
}

// TestHistoryToolsSearchAndEnd: the model searches an earlier
// conversation and ends its episode; the client gets the final answer
// only, the stored turn keeps Recall's rounds flagged, and the episode is
// sealed. The test logs the transcript.
func TestHistoryToolsSearchAndEnd(t *testing.T) {
	h := toolsHarness(t, "3")
	h.Say("rk-acme-1", "trip", "we fly to Lisbon on the ninth")
	before := len(h.Up.Requests())
	h.Up.Enqueue(
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("search_conversations", `{"query":"Lisbon"}`)}},
		upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{toolCall("end_conversation", `{"reason":"answered"}`)}},
		upstreamtest.Reply{Content: "You fly to Lisbon on the ninth."},
	)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"when do we fly?"}]}`
	r := h.Post("/v1/chat/completions", "rk-acme-1", "now", body)
	h.WaitDone("now")
	if r.Status != 200 {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
	if got := gjson.Get(r.Body, "choices.0.message.content").String(); got != "You fly to Lisbon on the ninth." {
		t.Errorf("got content %q", got)
	}
	if gjson.Get(r.Body, "choices.0.message.tool_calls").Exists() {
		t.Errorf("got Recall's calls in the client's answer: %s", r.Body)
	}
	reqs := h.Up.Requests()[before:]
	if len(reqs) != 3 {
		t.Fatalf("got %d upstream requests, want 3", len(reqs))
	}
	t.Logf("client sent: %s", body)
	for i, q := range reqs {
		names := gjson.GetBytes(q.Body, "tools.#.function.name").String()
		if !strings.Contains(names, "search_conversations") {
			t.Errorf("request %d offers %s, want the history tools", i+1, names)
		}
		t.Logf("upstream request %d messages: %s", i+1, gjson.GetBytes(q.Body, "messages").Raw)
	}
	if !strings.Contains(gjson.GetBytes(reqs[1].Body, "messages.2.content").String(), `"conversation_id":"trip"`) {
		t.Errorf("round 2 got %s, want the search hit on trip", gjson.GetBytes(reqs[1].Body, "messages").Raw)
	}
	t.Logf("client got: %s", r.Body)
	stored := h.Stored("acme", "now")
	var flags []history.Flags
	for _, m := range stored {
		flags = append(flags, m.Flags&history.Recorded)
	}
	want := []history.Flags{0, history.Internal, history.Internal, history.Internal, history.Internal, 0}
	if len(flags) != len(want) {
		t.Fatalf("got stored flags %v, want %v", flags, want)
	}
	for i := range want {
		if flags[i] != want[i] {
			t.Errorf("stored %d: got flags %v, want %v", i, flags[i], want[i])
		}
	}
	if m := h.Meta("acme", "now"); len(m.Episodes) != 1 || m.Episodes[0].To != 6 {
		t.Errorf("got episodes %+v, want one sealed through seq 6", m.Episodes)
	}
	if got := h.Metric(`recall_history_tool_calls_total{outcome="ok",tenant="acme",tool="search_conversations"}`); got != 1 {
		t.Errorf("got %v search calls counted, want 1", got)
	}

	// A full-resend client that never saw the rounds: not doubled.
	resend := `{"model":"gpt-4o","messages":[{"role":"user","content":"when do we fly?"},{"role":"assistant","content":"You fly to Lisbon on the ninth."},{"role":"user","content":"thanks"}]}`
	h.PostDone("/v1/chat/completions", "rk-acme-1", "now", resend)
	if n := len(h.Stored("acme", "now")); n != 8 {
		t.Errorf("got %d stored messages after the resend, want 8 (6 + thanks + answer)", n)
	}
	last := h.Up.Last()
	if n := len(gjson.GetBytes(last.Body, "messages").Array()); n != 7 {
		t.Errorf("got %d messages upstream, want 7 (the rounds kept, nothing doubled): %s", n, gjson.GetBytes(last.Body, "messages").Raw)
	}
}
