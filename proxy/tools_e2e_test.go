package proxy_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// checkUpstreamGot checks that the upstream's last request was valid to
// it (a strict one rejects a call without its results) and held want
// (e2etest.RenderAll's form), and returns that request.
func checkUpstreamGot(t *testing.T, h *harness, want ...string) upstreamtest.Received {
	t.Helper()
	last := h.Up.Last()
	if last.Rejected != nil {
		t.Fatalf("upstream rejected the context: %v", last.Rejected)
	}
	if got := e2etest.RenderAll(last.Messages); !slices.Equal(got, want) {
		t.Errorf("upstream got %q, want %q", got, want)
	}
	return last
}

func TestStreamedParallelToolCallsAreRecorded(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	c := h.Client(key, "tools-1")
	ctx := context.Background()
	h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{
		{ID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_b", Name: "weather", Arguments: `{"city":"Tokyo"}`},
	}})
	p := e2etest.ChatParams(openai.UserMessage("weather in Paris and Tokyo?"))
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	acc := e2etest.StreamChat(t, c, p)
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 2 || calls[1].Function.Arguments != `{"city":"Tokyo"}` {
		t.Fatalf("client assembled calls %+v", calls)
	}

	// A delta client sends only the results; Recall supplies the call.
	_, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(
		openai.ToolMessage("18C", "call_a"),
		openai.ToolMessage("9C", "call_b"),
	))
	if err != nil {
		t.Fatal(err)
	}
	last := checkUpstreamGot(t, h, "user:weather in Paris and Tokyo?", "assistant: calls=call_a,call_b", "tool(call_a):18C", "tool(call_b):9C")
	// The recorded call carries the arguments concatenated from the stream.
	var msg struct {
		ToolCalls []struct {
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(last.Messages[1], &msg); err != nil {
		t.Fatal(err)
	}
	if msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || msg.ToolCalls[0].Function.Name != "weather" {
		t.Errorf("recorded call %+v", msg.ToolCalls[0])
	}
}

func TestUnansweredToolCallIsRepaired(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	// The client's own history holds a call it never answered (call_2),
	// which a strict provider would reject.
	body := `{"model":"gpt-4o","messages":[
		{"role":"user","content":"look both up"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},
			{"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"one"},
		{"role":"user","content":"go on"}]}`
	resp := h.Post("/v1/chat/completions", key, "repair-1", body)
	if resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	checkUpstreamGot(t, h, "user:look both up", "assistant: calls=call_1", "tool(call_1):one", "user:go on")
	if c := resp.Header.Get("X-Recall-Curation"); !strings.Contains(c, "repaired_calls=1") {
		t.Errorf("X-Recall-Curation %q, want repaired_calls=1", c)
	}
	// Storage keeps what the client sent; only the sent copy is repaired.
	stored := e2etest.Active(h.Stored(h.PassNamespace(key), "repair-1"))
	if len(stored) != 5 || stored[1] != "assistant: calls=call_1,call_2" {
		t.Errorf("stored %q", stored)
	}
}

// The current turn is the client's: a tool result in it that answers no
// call (in it or at the end of the stored history) is refused as OpenAI
// refuses it, before the upstream is called, and nothing is stored.
// Repair stays for stored history only.
func TestOrphanToolResultInTheCurrentTurnIsRefused(t *testing.T) {
	tests := []struct {
		name, seed, body, param string
	}{
		{name: "lone result", body: `[{"role":"tool","tool_call_id":"nope","content":"stray"}]`, param: "messages.[0].role"},
		{name: "result before a user message", body: `[{"role":"system","content":"be brief"},{"role":"tool","tool_call_id":"call_x","content":"stray"},{"role":"user","content":"hi"}]`,
			param: "messages.[1].role"},
		{name: "wrong id after a stored call", seed: "call", body: `[{"role":"tool","tool_call_id":"call_9","content":"wrong"}]`, param: "messages.[0].role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, e2etest.Options{})
			conv := "orphan-1"
			if tt.seed != "" {
				h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{ID: "call_1", Name: "f", Arguments: "{}"}}})
				if r := h.Post("/v1/chat/completions", key, conv, e2etest.ChatBody("call f", false)); r.Status != 200 {
					t.Fatalf("seed: %d %s", r.Status, r.Body)
				}
				h.WaitDone(conv)
			}
			before, calls := len(h.Stored(h.PassNamespace(key), conv)), h.Up.Count()
			r := h.Post("/v1/chat/completions", key, conv, `{"model":"gpt-4o","messages":`+tt.body+`}`)
			if r.Status != 400 || !strings.Contains(r.Body, `"param":"`+tt.param+`"`) ||
				!strings.Contains(r.Body, "must be a response to a preceeding message with 'tool_calls'") {
				t.Fatalf("got %d %s, want 400 naming %s", r.Status, r.Body, tt.param)
			}
			if got := h.Up.Count(); got != calls {
				t.Errorf("the upstream got %d requests, want none", got-calls)
			}
			if got := len(h.Stored(h.PassNamespace(key), conv)); got != before {
				t.Errorf("stored %d messages, want %d", got, before)
			}
		})
	}
}
