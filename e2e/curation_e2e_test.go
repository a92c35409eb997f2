package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// withBudget sets the default history budget to tokens.
func withBudget(tokens int) func(*config.Global) {
	return func(g *config.Global) { g.Defaults.History.BudgetTokens = tokens }
}

func TestLongConversationStaysInBudgetWithStablePrefix(t *testing.T) {
	const budget = 600
	h := e2etest.New(t, e2etest.Options{Global: withBudget(budget)})
	var prev []string
	shared, steps := 0, 0
	for i := range 40 {
		body := fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"turn %d %s"}]}`,
			i, strings.Repeat("lorem ipsum ", 8))
		r := h.Post("/v1/chat/completions", key, "long-1", body)
		if r.Status != 200 {
			t.Fatalf("turn %d: %d %s", i, r.Status, r.Body)
		}
		tokens, err := strconv.Atoi(r.Header.Get("X-Recall-Context-Tokens"))
		if err != nil || tokens > budget {
			t.Fatalf("turn %d: context tokens %q over budget %d", i, r.Header.Get("X-Recall-Context-Tokens"), budget)
		}
		sent := e2etest.RenderAll(h.Up.Last().Messages)
		if sent[0] != "system:be brief" {
			t.Fatalf("turn %d: instructions not first: %q", i, sent[0])
		}
		if i > 0 {
			steps++
			if len(sent) >= len(prev) && slices.Equal(sent[:len(prev)], prev) {
				shared++
			}
		}
		// The next request's prefix is this context plus this answer.
		prev = append(sent, "assistant:echo: "+strings.TrimPrefix(sent[len(sent)-1], "user:"))
	}
	var incl, stored int
	fmt.Sscanf(h.Post("/v1/chat/completions", key, "long-1", `{"messages":[{"role":"user","content":"last"}]}`).Header.Get("X-Recall-History"), "%d/%d", &incl, &stored)
	if stored != 41 || incl >= stored {
		t.Errorf("X-Recall-History %d/%d, want fewer included than the 41 stored", incl, stored)
	}
	// With the stepped cut most consecutive requests extend the previous
	// context; sliding by one turn per request would share none.
	if frac := float64(shared) / float64(steps); frac < 0.7 {
		t.Errorf("only %d of %d requests extended the previous context (%.2f)", shared, steps, frac)
	} else {
		t.Logf("%d of %d consecutive requests extended the previous context (%.2f)", shared, steps, frac)
	}
}

func TestLongToolResultsAreCutInStorageAndInLaterTurns(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) {
		g.Defaults.History.StoredToolResultChars = 3000
		g.Defaults.History.OldToolResultChars = 100
	}})
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "read", Arguments: "{}"}}})
	if r := h.Post("/v1/chat/completions", key, "cut-1", `{"messages":[{"role":"user","content":"read it"}]}`); r.Status != 200 {
		t.Fatal(r.Body)
	}
	long := strings.Repeat("x", 5000)
	r := h.Post("/v1/chat/completions", key, "cut-1", `{"messages":[{"role":"tool","tool_call_id":"call_1","content":"`+long+`"}]}`)
	if r.Status != 200 {
		t.Fatal(r.Body)
	}
	// The current turn's result is sent whole...
	if got := toolContent(t, h.Up.Last().Messages); len(got) != 5000 {
		t.Errorf("current turn's tool result sent with %d chars, want 5000", len(got))
	}
	// ...stored cut with the marker...
	for _, m := range h.Stored(h.PassNamespace(key), "cut-1") {
		if m.Role == "tool" {
			var c struct{ Content string }
			json.Unmarshal(m.Raw, &c)
			if !strings.HasPrefix(c.Content, long[:3000]) || !strings.HasSuffix(c.Content, "[truncated for storage]") || len(c.Content) > 3100 {
				t.Errorf("stored tool result: %d chars, ends %q", len(c.Content), c.Content[len(c.Content)-30:])
			}
		}
	}
	// ...and cut to old_tool_result_chars once its turn is no longer current.
	r = h.Post("/v1/chat/completions", key, "cut-1", `{"messages":[{"role":"user","content":"thanks"}]}`)
	if r.Status != 200 {
		t.Fatal(r.Body)
	}
	got := toolContent(t, h.Up.Last().Messages)
	if !strings.HasPrefix(got, strings.Repeat("x", 100)+"\n[truncated for context") {
		t.Errorf("earlier tool result sent as %q", got[:min(len(got), 160)])
	}
	if c := r.Header.Get("X-Recall-Curation"); !strings.Contains(c, "truncated_tool_results=1") {
		t.Errorf("X-Recall-Curation %q", c)
	}
}

func toolContent(t *testing.T, msgs []json.RawMessage) string {
	t.Helper()
	for _, m := range msgs {
		var c struct{ Role, Content string }
		json.Unmarshal(m, &c)
		if c.Role == "tool" {
			return c.Content
		}
	}
	t.Fatal("no tool message sent")
	return ""
}
