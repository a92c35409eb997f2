package jsonscan

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestTypeName(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`"s"`, "a string"},
		{`""`, "a string"},
		{`0`, "an integer"},
		{`-12`, "an integer"},
		{`1.5`, "a decimal"},
		{`1e3`, "a decimal"},
		{`-2E-1`, "a decimal"},
		{`true`, "a boolean"},
		{`false`, "a boolean"},
		{`null`, "null"},
		{``, "null"},
		{`[1]`, "an array"},
		{`{"a":1.5}`, "an object"},
		{" \n\t{} ", "an object"},
	}
	for _, tt := range tests {
		if got := TypeName(tt.raw); got != tt.want {
			t.Errorf("TypeName(%q): got %q, want %q", tt.raw, got, tt.want)
		}
		// The protocols pass gjson's Raw: of a document, and of a member
		// (a missing one's is empty).
		if got := TypeName(gjson.Parse(tt.raw).Raw); got != tt.want {
			t.Errorf("TypeName of gjson.Parse(%q).Raw: got %q, want %q", tt.raw, got, tt.want)
		}
		if got := TypeName(gjson.Get(`{"v":`+tt.raw+`}`, "v").Raw); tt.raw != "" && got != tt.want {
			t.Errorf("TypeName of a member %q: got %q, want %q", tt.raw, got, tt.want)
		}
	}
	if got := TypeName(gjson.Get(`{}`, "v").Raw); got != "null" {
		t.Errorf("TypeName of a missing member: got %q, want null", got)
	}
}
