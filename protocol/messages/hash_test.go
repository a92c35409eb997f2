package messages

import "testing"

func TestHashEqual(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"key order and whitespace",
			`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
			`{ "content" : [ { "text":"hi", "type":"text" } ], "role":"user" }`},
		{"string equals one text block",
			`{"role":"user","content":"hi"}`,
			`{"role":"user","content":[{"type":"text","text":"hi"}]}`},
		{"cache_control on a block",
			`{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"user","content":"hi"}`},
		{"cache_control nested in a tool result",
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}`},
		{"is_error false and null citations",
			`{"role":"assistant","content":[{"type":"text","text":"x","citations":null}]}`,
			`{"role":"assistant","content":[{"type":"text","text":"x"}]}`},
		{"tool result is_error false",
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r","is_error":false}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}`},
		{"input key order and escapes",
			`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1,"b":"\u00e9"}}]}`,
			`{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"b":"é","a":1.0}}]}`},
		{"other members of the message",
			`{"role":"user","content":"hi","id":"x"}`,
			`{"role":"user","content":"hi"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := (Codec{}).Hash([]byte(tt.a)), (Codec{}).Hash([]byte(tt.b)); a != b {
				t.Errorf("got %x and %x, want equal hashes", a, b)
			}
		})
	}
}

func TestHashDiffers(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"role", `{"role":"user","content":"hi"}`, `{"role":"assistant","content":"hi"}`},
		{"text", `{"role":"user","content":"hi"}`, `{"role":"user","content":"ho"}`},
		{"two blocks against their joined text", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, `{"role":"user","content":"ab"}`},
		{"tool_use id", `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`, `{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"f","input":{}}]}`},
		{"tool input", `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1}}]}`, `{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":2}}]}`},
		{"signature", `{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s1"}]}`, `{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s2"}]}`},
		{"is_error true", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r","is_error":true}]}`, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}`},
		{"a lone surrogate does not swallow the escape after it", `{"role":"assistant","content":[{"type":"thinking","thinking":"\ud83d\u0041","signature":"s"}]}`, `{"role":"assistant","content":[{"type":"thinking","thinking":"\ud83d","signature":"s"}]}`},
		{"block order", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, `{"role":"user","content":[{"type":"text","text":"b"},{"type":"text","text":"a"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := (Codec{}).Hash([]byte(tt.a)), (Codec{}).Hash([]byte(tt.b)); a == b {
				t.Errorf("got equal hashes %x, want different", a)
			}
		})
	}
}
