package chat

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseRequestInvalidUTF8(t *testing.T) {
	const user = `{"role":"user","content":"x"}`
	tests := []struct {
		name  string
		body  string
		param string
		code  string
	}{
		{"content string", `{"messages":[` + user + `,` + user + `,{"role":"user","content":"caf` + "\xe9" + `"}]}`, "messages[2].content", "invalid_value"},
		{"text part", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"` + "\xff" + `"}]}]}`, "messages[0].content[1].text", "invalid_value"},
		{"image url", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + "http://x/\xc0\xaf" + `"}}]}]}`, "messages[0].content[0].image_url.url", "invalid_value"},
		{"tool call arguments", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"` + "\xe2\x82" + `"}}]}]}`, "messages[0].tool_calls[0].function.arguments", "invalid_value"},
		{"UTF-8 encoded surrogate", `{"messages":[{"role":"user","content":"` + "\xed\xa0\x80" + `"}]}`, "messages[0].content", "invalid_value"},
		{"key of a message", `{"messages":[{"role":"user","content":"x","` + "\xff" + `":1}]}`, "messages[0]", "invalid_value"},
		{"only the first invalid byte counts", `{"messages":[{"role":"user","name":"` + "\xff" + `","content":"` + "\xff" + `"}]}`, "messages[0].name", "invalid_value"},
		{"model", `{"model":"` + "\xff" + `","messages":[` + user + `]}`, "", "invalid_json"},
		{"tools", `{"messages":[` + user + `],"tools":[{"type":"function","function":{"name":"` + "\xff" + `"}}]}`, "", "invalid_json"},
		{"top-level key", `{"messages":[` + user + `],"` + "\xff" + `":1}`, "", "invalid_json"},
		{"not an object", `"` + "\xff" + `"`, "", "invalid_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := requestError(t, tt.body, tt.param, tt.code)
			if !strings.Contains(e.Message, "UTF-8") || !strings.Contains(e.Message, tt.param) {
				t.Errorf("Message: got %q, want it to say UTF-8 and name %q", e.Message, tt.param)
			}
			if !utf8.ValidString(e.Message) {
				t.Errorf("Message: got invalid UTF-8 %q, want valid", e.Message)
			}
		})
	}
}

// TestParseRequestValidUTF8 checks what must still pass: multi-byte text,
// and \u escapes, including a lone surrogate, which is valid JSON and valid
// UTF-8 (six ASCII bytes) and is left for the upstream's decoder to judge.
func TestParseRequestValidUTF8(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"multi-byte text", `{"messages":[{"role":"user","content":"café, 日本語, 😀"}]}`},
		{"escaped pair", `{"messages":[{"role":"user","content":"\ud83d\ude00"}]}`},
		{"lone surrogate escape", `{"messages":[{"role":"user","content":"\ud800"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseRequest([]byte(tt.body)); err != nil {
				t.Errorf("got error %v, want nil", err)
			}
		})
	}
}

// BenchmarkUTF8Valid measures the whole-body UTF-8 check ParseRequest
// makes, on the bodies of BenchmarkCheckDepth.
func BenchmarkUTF8Valid(b *testing.B) {
	for _, bb := range benchBodies {
		b.Run(bb.name, func(b *testing.B) {
			benchAccepts(b, bb.body, func(body []byte) error {
				if !utf8.Valid(body) {
					return errors.New("invalid UTF-8")
				}
				return nil
			})
		})
	}
}
