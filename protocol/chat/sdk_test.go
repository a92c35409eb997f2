package chat

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestHashMatchesSDK checks that an assembled message hashes like the same
// message after a client built on the official OpenAI SDK decodes it from a
// response and sends it back: both the response shape re-encoded and the
// request parameter made by ToParam, with their different key orders and
// the fields the SDK adds.
func TestHashMatchesSDK(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
	}{
		{"text", []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello \"there\"\n"}}]}`}},
		{"empty", []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`}},
		{"refusal", []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":"I can't."}}]}`}},
		{"tool calls", []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\": 1}"}}]}}]}`,
		}},
		{"text and tool call", []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Checking."}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for _, c := range tt.chunks {
				if err := a.Add([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			assembled := a.Reply().Message
			var msg openai.ChatCompletionMessage
			if err := json.Unmarshal(assembled, &msg); err != nil {
				t.Fatalf("SDK cannot decode %s: %v", assembled, err)
			}
			response, err := json.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			param, err := json.Marshal(msg.ToParam())
			if err != nil {
				t.Fatal(err)
			}
			want := Hash(assembled)
			for _, sdk := range [][]byte{response, param} {
				if got := Hash(sdk); got != want {
					t.Errorf("Hash(%s): got %x, want %x, the hash of %s", sdk, got, want, assembled)
				}
			}
		})
	}
}
