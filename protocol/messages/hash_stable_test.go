package messages

import (
	"strings"
	"testing"
)

// stableMessages are messages whose own canonical form (not chat's) makes
// their hash: stored messages keep the hash they were written with.
var stableMessages = []struct {
	msg  string
	want uint64
}{
	{`{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm \u00e9","signature":"sig"},{"type":"text","text":"a","citations":null}]}`, 0xb8c760826fffa09e},
	{`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"f","input":{"b":[1,null,""],"a":{"x":1.5},"a":{"x":2}}}]}`, 0x511561c20d777573},
	{`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAA"}}],"is_error":true}]}`, 0x243715c2bf780eee},
	{`{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"d"},"title":"t","cache_control":{"type":"ephemeral"}}]}`, 0x31262fac4d1c6364},
	{`["not", "an", "object"]`, 0x966405912fbce112},
}

// TestHashStable pins the hashes of messages that have no chat rendering:
// stored messages keep the hash they were written with, so their canonical
// form must never change.
func TestHashStable(t *testing.T) {
	for _, tt := range stableMessages {
		if got := (Codec{}).Hash([]byte(tt.msg)); got != tt.want {
			t.Errorf("Hash(%s): got %#x, want %#x", tt.msg, got, tt.want)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	msgs := map[string]string{
		"thinking":      stableMessages[0].msg,
		"tool-use":      stableMessages[1].msg,
		"result":        stableMessages[2].msg,
		"easy-text":     `{"role":"user","content":"Question 1: what is the weather like in Paris this afternoon, and should I bring an umbrella?"}`,
		"long-thinking": `{"role":"assistant","content":[{"type":"thinking","thinking":"` + strings.Repeat("All work and no play makes Jack a dull boy. ", 100) + `","signature":"s"}]}`,
	}
	for _, name := range []string{"thinking", "tool-use", "result", "easy-text", "long-thinking"} {
		raw := []byte(msgs[name])
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				Codec{}.Hash(raw)
			}
		})
	}
}
