package proxy_test

import (
	"testing"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

// Tool calls streamed with descending indexes are stored in index order,
// whole, and the conversation goes on with their results.
func TestStreamedToolCallsWithDescendingIndexes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	conv := "descending"
	h.up.Enqueue(upstreamtest.Reply{DescendingToolIndexes: true, ToolCalls: []upstreamtest.ToolCall{
		{ID: "call_a", Name: "f", Arguments: `{"n":0}`}, {ID: "call_b", Name: "f", Arguments: `{"n":1}`}, {ID: "call_c", Name: "f", Arguments: `{"n":2}`},
	}})
	readAll(t, h.send(key, conv, chatBody("call three tools", true)))
	if d := h.waitDone(conv); !d.Committed {
		t.Fatalf("got %+v, want a committed turn", d)
	}
	want := []string{"user:call three tools", "assistant: calls=call_a,call_b,call_c"}
	if got := active(h.stored(h.passNamespace(key), conv)); !equalStrings(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	results := `{"model":"gpt-4o","messages":[` + resultJSON("call_a", "0") + `,` + resultJSON("call_b", "1") + `,` + resultJSON("call_c", "2") + `]}`
	if r := h.post("/v1/chat/completions", key, conv, results); r.status != 200 {
		t.Fatalf("tool results: got %d %s, want 200", r.status, r.body)
	}
	h.waitDone(conv)
}
