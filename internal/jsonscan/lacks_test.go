package jsonscan

import "testing"

// TestLacks: a document lacks a string's tail only when no string can
// end in it, spelled any way; text that mentions it inside another
// string is not it.
func TestLacks(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		want      bool
	}{
		{"absent", `{"role":"user","content":"hello"}`, true},
		{"a value", `{"type":"tool_use","id":"t1"}`, false},
		{"a key", `{"tool_use":1}`, false},
		{"escaped", `{"type":"tool\u005fuse","id":"t1"}`, false},
		{"any \\u escape", `{"content":"caf\u00e9"}`, false},
		{"quoted inside text", `{"content":"a \"tool_use\" block"}`, true},
		{"unquoted inside text", `{"content":"the tool_use block"}`, true},
		{"another type", `{"type":"tool_use_extra"}`, true},
		{"another string with the tail", `{"type":"server_tool_use"}`, false},
		{"empty", ``, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lacks([]byte(tt.doc), []byte(`_use"`)); got != tt.want {
				t.Errorf("Lacks(%s): got %v, want %v", tt.doc, got, tt.want)
			}
		})
	}
}
