package messages

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

// chatAnswer is an answer as a chat-completions upstream gives it: Stored
// in chat's JSON, so the Message is written from the canonical parts.
func chatAnswer() *wire.Answer {
	return &wire.Answer{
		ID:     "chatcmpl-1",
		Model:  "gpt-4o",
		Stored: [][]byte{[]byte(`{"role":"assistant","content":"Hello","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`)},
		Message: wire.Message{Role: wire.RoleAssistant, Parts: []wire.Part{
			{Kind: wire.Text, Text: "Hello"},
			{Kind: wire.ToolCall, CallID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		}},
		Stop:  wire.StopToolCalls,
		Usage: wire.Usage{InputTokens: 30, CachedTokens: 10, OutputTokens: 7},
	}
}

// chatDeltas are the deltas a chat upstream's stream of chatAnswer gives,
// with some reasoning first.
func chatDeltas() []wire.Delta {
	return []wire.Delta{
		{Kind: wire.ReasoningDelta, Text: "The user "},
		{Kind: wire.ReasoningDelta, Text: "wants weather."},
		{Kind: wire.TextDelta, Text: "Hel"},
		{Kind: wire.TextDelta, Text: "lo"},
		{Kind: wire.ToolCallStart, CallID: "call_1", Name: "get_weather"},
		{Kind: wire.ArgumentsDelta, Text: `{"city":`},
		{Kind: wire.ArgumentsDelta, Text: `"Paris"}`},
		{Kind: wire.Finish, Text: wire.StopToolCalls, Usage: wire.Usage{InputTokens: 30, CachedTokens: 10, OutputTokens: 7}},
	}
}

// serveMessages is a Messages endpoint that answers every request with
// answer, rendered by Ingress as the proxy will: AppendAnswer, or a
// Renderer driven by deltas (none: End renders the whole answer).
func serveMessages(t *testing.T, answer *wire.Answer, deltas []wire.Delta) *anthropic.Client {
	t.Helper()
	srv := prototest.IngressServer(t, Ingress{}, "/v1/messages", func(*wire.Request) *wire.Answer { return answer }, deltas)
	c := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return &c
}

func newParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))},
	}
}

// checkSDKMessage asserts what the SDK read of chatAnswer.
func checkSDKMessage(t *testing.T, m *anthropic.Message, wantTypes string) {
	t.Helper()
	var types []string
	for _, b := range m.Content {
		types = append(types, b.Type)
	}
	if got := strings.Join(types, ","); got != wantTypes {
		t.Fatalf("content types: got %s, want %s", got, wantTypes)
	}
	text, call := m.Content[len(types)-2], m.Content[len(types)-1]
	var input struct{ City string }
	if err := json.Unmarshal(call.Input, &input); err != nil || input.City != "Paris" {
		t.Errorf("tool input: got %s (%v), want city Paris", call.Input, err)
	}
	if text.Text != "Hello" || call.ID != "call_1" || call.Name != "get_weather" {
		t.Errorf("got text %q, call %q %q", text.Text, call.ID, call.Name)
	}
	if m.StopReason != anthropic.StopReasonToolUse || !strings.HasPrefix(m.ID, "msg_") || m.Role != "assistant" {
		t.Errorf("got stop %q id %q role %q", m.StopReason, m.ID, m.Role)
	}
	if m.Usage.InputTokens != 20 || m.Usage.CacheReadInputTokens != 10 || m.Usage.OutputTokens != 7 {
		t.Errorf("usage: got %+v", m.Usage)
	}
}

// The official Go SDK reads AppendAnswer's Message object.
func TestSDKNew(t *testing.T) {
	c := serveMessages(t, chatAnswer(), nil)
	m, err := c.Messages.New(context.Background(), newParams())
	if err != nil {
		t.Fatal(err)
	}
	checkSDKMessage(t, m, "text,tool_use")
	if m.Model != "gpt-4o" {
		t.Errorf("model: got %q", m.Model)
	}
}

// A Messages upstream's own blocks reach the client as they were,
// thinking and its signature included.
func TestSDKNewMessagesBlocks(t *testing.T) {
	a := chatAnswer()
	a.ID = "msg_upstream1"
	a.Stored = [][]byte{[]byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig-1"},{"type":"text","text":"Hello"},{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}}]}`)}
	c := serveMessages(t, a, nil)
	m, err := c.Messages.New(context.Background(), newParams())
	if err != nil {
		t.Fatal(err)
	}
	checkSDKMessage(t, m, "thinking,text,tool_use")
	if m.ID != "msg_upstream1" || m.Content[0].Signature != "sig-1" || m.Content[0].Thinking != "hmm" {
		t.Errorf("got id %q thinking %+v", m.ID, m.Content[0])
	}
}

// The official Go SDK reads the Renderer's stream, driven by deltas as
// the proxy drives it, and Accumulate rebuilds the whole Message.
func TestSDKNewStreaming(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deltas []wire.Delta
		types  string
	}{
		{"from deltas", chatDeltas(), "thinking,text,tool_use"},
		{"from the whole answer", nil, "text,tool_use"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := serveMessages(t, chatAnswer(), tt.deltas)
			stream := c.Messages.NewStreaming(context.Background(), newParams())
			var m anthropic.Message
			var text strings.Builder
			for stream.Next() {
				ev := stream.Current()
				if err := m.Accumulate(ev); err != nil {
					t.Fatalf("accumulate %s: %v", ev.Type, err)
				}
				if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" {
					text.WriteString(ev.Delta.Text)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			checkSDKMessage(t, &m, tt.types)
			if text.String() != "Hello" {
				t.Errorf("streamed text: got %q, want Hello", text.String())
			}
			if tt.deltas != nil && m.Content[0].Thinking != "The user wants weather." {
				t.Errorf("thinking: got %q", m.Content[0].Thinking)
			}
		})
	}
}
