package chat

import (
	"testing"
	"unicode/utf8"
)

// answerCase is one assistant answer, to be sent both ways.
type answerCase struct {
	name    string
	content *string
	refusal string
	calls   []answerCall
	audioID string
}

type answerCall struct{ id, name, args string }

// nonStreamed renders the answer as a chat.completion body, with the
// response-only fields OpenAI adds.
func (c answerCase) nonStreamed(t *testing.T) []byte {
	msg := map[string]any{"role": "assistant", "content": c.content, "refusal": nil, "annotations": []any{}}
	if c.refusal != "" {
		msg["refusal"] = c.refusal
	}
	if len(c.calls) > 0 {
		var calls []any
		for _, tc := range c.calls {
			calls = append(calls, map[string]any{"id": tc.id, "type": "function", "function": map[string]any{"name": tc.name, "arguments": tc.args}})
		}
		msg["tool_calls"] = calls
	}
	if c.audioID != "" {
		msg["audio"] = map[string]any{"id": c.audioID, "data": "UklGRiQAAABXQVZF", "expires_at": 1729018505, "transcript": "hello"}
	}
	return mustMarshal(t, map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": "stop"}},
	})
}

// chunks renders the answer as the data payloads of a stream: a role
// delta, the text and refusal a few runes at a time, each tool call's id
// and name then its arguments in pieces, the audio id with its first
// transcript piece, a finish chunk and [DONE].
func (c answerCase) chunks(t *testing.T) [][]byte {
	var out [][]byte
	delta := func(d map[string]any) {
		out = append(out, mustMarshal(t, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o",
			"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}},
		}))
	}
	delta(map[string]any{"role": "assistant", "content": "", "refusal": nil})
	if c.audioID != "" {
		delta(map[string]any{"audio": map[string]any{"id": c.audioID, "transcript": "hel"}})
		delta(map[string]any{"audio": map[string]any{"transcript": "lo", "data": "UklGRiQAAABXQVZF"}})
	}
	if c.content != nil {
		for _, p := range pieces(*c.content) {
			delta(map[string]any{"content": p})
		}
	}
	for _, p := range pieces(c.refusal) {
		delta(map[string]any{"refusal": p})
	}
	for i, tc := range c.calls {
		delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.id, "type": "function", "function": map[string]any{"name": tc.name, "arguments": ""}}}})
		for _, p := range pieces(tc.args) {
			delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}})
		}
	}
	out = append(out, mustMarshal(t, map[string]any{"id": "chatcmpl-1", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}}))
	return append(out, []byte("[DONE]"))
}

// pieces cuts s into pieces of at most three runes.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 0
		for range 3 {
			if n < len(s) {
				_, size := utf8.DecodeRuneInString(s[n:])
				n += size
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func ptr(s string) *string { return &s }

// TestStreamedAndNonStreamedStoreTheSameMessage sends the same answers as a
// non-streamed body and as a stream: the stored messages must be
// byte-identical, whatever response-only fields the body carried.
func TestStreamedAndNonStreamedStoreTheSameMessage(t *testing.T) {
	tests := []answerCase{
		{name: "text", content: ptr("The capital of France is Paris.")},
		{name: "escapes and non-ASCII", content: ptr("Line \"one\"\n\tcafé <&> \u2028 😀 \\ done")},
		{name: "empty", content: ptr("")},
		{name: "null content", content: nil},
		{name: "refusal", refusal: "I'm sorry, I can't help with that."},
		{name: "tool calls", calls: []answerCall{{"call_a", "get_weather", `{"location": "Paris, France"}`}, {"call_b", "get_time", `{"tz":"Europe/Paris"}`}}},
		{name: "text and a tool call", content: ptr("Let me check."), calls: []answerCall{{"call_a", "f", "{}"}}},
		{name: "audio", audioID: "audio_6744555cc6d48190b67e70798ab606c3"},
		{name: "audio and text", content: ptr("hello"), audioID: "audio_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, err := ParseReply(tt.nonStreamed(t))
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			var a Assembler
			for _, c := range tt.chunks(t) {
				if err := a.Add(c); err != nil {
					t.Fatalf("Add(%s): %v", c, err)
				}
			}
			streamed := a.Reply()
			if string(whole.Message) != string(streamed.Message) {
				t.Errorf("non-streamed: got %s, want %s as streamed", whole.Message, streamed.Message)
			}
			// Replayed as input, the message must pass validation.
			body := `{"messages":[{"role":"user","content":"q"},` + string(whole.Message) + `]}`
			if _, err := ParseRequest([]byte(body)); err != nil {
				t.Errorf("ParseRequest(%s): got %v, want nil", body, err)
			}
			if whole.FinishReason != streamed.FinishReason || whole.ID != streamed.ID {
				t.Errorf("finish reason and id: got %q %q, want %q %q", whole.FinishReason, whole.ID, streamed.FinishReason, streamed.ID)
			}
		})
	}
}
