package chat

import (
	"encoding/json"
	"testing"
)

func TestWithoutCacheHints(t *testing.T) {
	tests := []struct {
		name, msg, want string
	}{
		{"no hints", `{"role":"user", "content":"hi"}`, `{"role":"user", "content":"hi"}`},
		{"a mention in text is kept", `{"role":"user", "content":"what is cache_control?"}`, `{"role":"user", "content":"what is cache_control?"}`},
		{
			"on a text part",
			`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		},
		{
			"first member, whitespace",
			`{"role": "user", "content": [ {"cache_control": {"type": "ephemeral"}, "type": "text", "text": "hi"} ], "name": "a b"}`,
			`{"role":"user","content":[{"type":"text","text":"hi"}],"name":"a b"}`,
		},
		{"only member", `{"role":"user","content":[{"cache_control":{"type":"ephemeral"}}]}`, `{"role":"user","content":[{}]}`},
		{"on the message", `{"cache_control":{"type":"ephemeral"},"role":"user","content":"hi"}`, `{"role":"user","content":"hi"}`},
		{
			"several, nested, untouched parts kept byte for byte",
			`{"role":"user","content":[{"type":"image_url", "image_url":{"url":"u"}},{"type":"x","x":{"v":[1, 2],"cache_control":null}},{"type":"text","text":"cache_control","cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"user","content":[{"type":"image_url", "image_url":{"url":"u"}},{"type":"x","x":{"v":[1, 2]}},{"type":"text","text":"cache_control"}]}`,
		},
		{
			"tool call arguments are a string",
			`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"cache_control\":1}"}}]}`,
			`{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"cache_control\":1}"}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithoutCacheHints([]byte(tt.msg))
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("got invalid JSON %s", got)
			}
			if Hash(got) != Hash([]byte(tt.msg)) {
				t.Errorf("got hash %x, want the original's %x", Hash(got), Hash([]byte(tt.msg)))
			}
		})
	}
}

// A message without hints is returned as it is, without a copy.
func TestWithoutCacheHintsNoCopy(t *testing.T) {
	for _, s := range []string{`{"role":"user","content":"hi"}`, `{"role":"user", "content":[{"type":"text","text":"cache_control"}]}`} {
		msg := []byte(s)
		if got := WithoutCacheHints(msg); &got[0] != &msg[0] {
			t.Errorf("%s: got a copy, want msg itself", s)
		}
		if n := testing.AllocsPerRun(100, func() { WithoutCacheHints(msg) }); n != 0 {
			t.Errorf("%s: got %v allocations, want 0", s, n)
		}
	}
}
