package e2etest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/history"
)

// ChatParams is a chat-completions request for gpt-4o with msgs.
func ChatParams(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs}
}

// ChatBody is a one-message chat-completions body.
func ChatBody(text string, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "gpt-4o",
		"stream":   stream,
		"messages": []map[string]string{{"role": "user", "content": text}},
	})
	return string(b)
}

// UserJSON is a user message with text, as raw JSON.
func UserJSON(text string) string { return `{"role":"user","content":` + quote(text) + `}` }

// AssistantJSON is an assistant message with text, as raw JSON.
func AssistantJSON(text string) string { return `{"role":"assistant","content":` + quote(text) + `}` }

// CallJSON is an assistant message calling function f once, with call id
// id, as raw JSON.
func CallJSON(id string) string {
	return `{"role":"assistant","content":null,"tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"f","arguments":"{}"}}]}`
}

// ResultJSON is a tool message answering call id with text, as raw JSON.
func ResultJSON(id, text string) string {
	return `{"role":"tool","tool_call_id":"` + id + `","content":` + quote(text) + `}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// Active returns the active messages of msgs, rendered as Render does.
func Active(msgs []history.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Active() {
			out = append(out, Render(m.Raw))
		}
	}
	return out
}

// Render renders a message as "role:content" or "role:calls=[ids]" or
// "tool(id):content" for compact comparisons.
func Render(raw []byte) string {
	var m struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "invalid:" + string(raw)
	}
	var text string
	if err := json.Unmarshal(m.Content, &text); err != nil {
		text = string(m.Content)
	}
	s := m.Role
	if m.ToolCallID != "" {
		s += "(" + m.ToolCallID + ")"
	}
	s += ":" + text
	if len(m.ToolCalls) > 0 {
		ids := make([]string, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			ids[i] = c.ID
		}
		s += " calls=" + strings.Join(ids, ",")
	}
	return s
}

// RenderAll renders each of msgs as Render does.
func RenderAll(msgs []json.RawMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = Render(m)
	}
	return out
}

// StreamChat streams a chat completions request with the OpenAI SDK and
// returns what its chunks accumulate into, failing the test on the
// stream's error.
func StreamChat(t testing.TB, client openai.Client, p openai.ChatCompletionNewParams) openai.ChatCompletionAccumulator {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	return acc
}
