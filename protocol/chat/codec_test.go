package chat

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestCutContent(t *testing.T) {
	marker := func(kept, total int) string { return "[cut]" }
	tests := []struct {
		name, raw string
		max       int
		want      string
		ok        bool
	}{
		{"ascii", `{"role":"tool","content":"abcdef"}`, 3, "abc\n[cut]", true},
		{"runes, not bytes", `{"role":"tool","content":"ééééé"}`, 3, "ééé\n[cut]", true},
		{"bytes over, runes under", `{"role":"tool","content":"ééé"}`, 3, "ééé", false},
		{"short", `{"role":"tool","content":"abc"}`, 3, "abc", false},
		{"not a string", `{"role":"tool","content":[{"type":"text","text":"abcdef"}]}`, 3, `[{"type":"text","text":"abcdef"}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, ok := CutContent([]byte(tt.raw), tt.max, marker)
			if got := gjson.GetBytes(out, "content").String(); got != tt.want || ok != tt.ok {
				t.Errorf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
