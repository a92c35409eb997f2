package proxy_test

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// Tool calls streamed with descending indexes are stored in index order,
// whole, and the conversation goes on with their results.
func TestStreamedToolCallsWithDescendingIndexes(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	conv := "descending"
	h.Up.Enqueue(upstreamtest.Reply{DescendingToolIndexes: true, ToolCalls: []upstreamtest.ToolCall{
		{ID: "call_a", Name: "f", Arguments: `{"n":0}`}, {ID: "call_b", Name: "f", Arguments: `{"n":1}`}, {ID: "call_c", Name: "f", Arguments: `{"n":2}`},
	}})
	readAll(t, h.send(key, conv, e2etest.ChatBody("call three tools", true)))
	if d := h.WaitDone(conv); !d.Committed {
		t.Fatalf("got %+v, want a committed turn", d)
	}
	want := []string{"user:call three tools", "assistant: calls=call_a,call_b,call_c"}
	if got := e2etest.Active(h.Stored(h.PassNamespace(key), conv)); !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	results := `{"model":"gpt-4o","messages":[` + e2etest.ResultJSON("call_a", "0") + `,` + e2etest.ResultJSON("call_b", "1") + `,` + e2etest.ResultJSON("call_c", "2") + `]}`
	if r := h.Post("/v1/chat/completions", key, conv, results); r.Status != 200 {
		t.Fatalf("tool results: got %d %s, want 200", r.Status, r.Body)
	}
	h.WaitDone(conv)
}
