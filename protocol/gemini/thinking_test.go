package gemini

import (
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
)

// TestWithoutThinkingSeesThroughSignatures: a model content is the same
// message without its thought parts and thoughtSignatures (either
// spelling), as the chat message a client of another protocol resends
// it as; a content of thoughts alone is left out whole; a user content,
// or one without thoughts, has none.
func TestWithoutThinkingSeesThroughSignatures(t *testing.T) {
	call := `{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":1}}}]}`
	asChat := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]}`
	text := `{"role":"model","parts":[{"text":"Hi."}]}`
	for _, tc := range []struct {
		name      string
		raw, bare string // bare: "" for none
		empty, ok bool
	}{
		{name: "signed call", raw: `{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}]}`, bare: call, ok: true},
		{name: "snake_case signature", raw: `{"role":"model","parts":[{"thought_signature":"c2ln","functionCall":{"id":"c1","name":"f","args":{"a":1}}}]}`, bare: call, ok: true},
		{name: "thought and text", raw: `{"role":"model","parts":[{"text":"Let me see.","thought":true},{"text":"Hi.","thoughtSignature":"c2ln"}]}`, bare: text, ok: true},
		{name: "thoughts only", raw: `{"role":"model","parts":[{"text":"Hm.","thought":true},{"thoughtSignature":"c2ln"}]}`, empty: true, ok: true},
		{name: "no thoughts", raw: text},
		{name: "thought false", raw: `{"role":"model","parts":[{"text":"Hi.","thought":false}]}`},
		{name: "user content", raw: `{"role":"user","parts":[{"text":"Hi.","thoughtSignature":"c2ln"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, empty, ok := Codec{}.WithoutThinking([]byte(tc.raw))
			if ok != tc.ok || empty != tc.empty {
				t.Fatalf("got empty %v ok %v, want %v %v", empty, ok, tc.empty, tc.ok)
			}
			if tc.bare == "" {
				return
			}
			if want := (Codec{}).Hash([]byte(tc.bare)); h != want {
				t.Errorf("got hash %x, want %x (that of %s)", h, want, tc.bare)
			}
		})
	}
	h, _, _ := Codec{}.WithoutThinking([]byte(`{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":1}},"thoughtSignature":"c2ln"}]}`))
	if want := chat.Hash([]byte(asChat)); h != want {
		t.Errorf("the signed call without its signature hashes %x, the chat message %x", h, want)
	}
}
