package gemini

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/wire"
)

// A member is found in either spelling, and through a \u escape of its
// name, which the byte checks in front of gjson must not hide.
func TestGetFindsEverySpelling(t *testing.T) {
	for _, tt := range []struct{ name, raw, key, want string }{
		{"camel", `{"functionCall":{"name":"a"}}`, keyFunctionCall, `{"name":"a"}`},
		{"snake", `{"function_call":{"name":"b"}}`, keyFunctionCall, `{"name":"b"}`},
		{"camel wins", `{"function_call":{"name":"b"},"functionCall":{"name":"a"}}`, keyFunctionCall, `{"name":"a"}`},
		{"escaped camel", `{"function\u0043all":{"name":"c"}}`, keyFunctionCall, `{"name":"c"}`},
		{"escaped snake", `{"function\u005fcall":{"name":"d"}}`, keyFunctionCall, `{"name":"d"}`},
		{"missing", `{"text":"functionCall is a word here"}`, keyFunctionCall, ``},
		{"a path", `{"prompt_feedback":{"blockReason":"SAFETY"}}`, "promptFeedback.blockReason", `"SAFETY"`},
		{"not an object", `"functionCall"`, keyFunctionCall, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := get(gjson.Parse(tt.raw), tt.key).Raw; got != tt.want {
				t.Errorf("get(%s, %q): got %q, want %q", tt.raw, tt.key, got, tt.want)
			}
		})
	}
}

// The curator asks every stored content for its calls and results, and
// its role, on every request: a content of text parts answers without
// an allocation (each missed member used to make its snake_case name,
// and read the part's text twice).
func TestTextContentsAnswerWithoutAllocating(t *testing.T) {
	text := strings.Repeat("The trend holds. ", 40)
	model := []byte(`{"parts":[{"text":"` + text + `"}],"role":"model"}`)
	user := []byte(`{"role":"user","parts":[{"text":"` + text + `"}]}`)
	var c Codec
	dst := make([]string, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		dst = c.Calls(c.Results(dst[:0], user), model)
		if c.Role(user) != wire.RoleUser || c.Role(model) != wire.RoleAssistant {
			t.Fatal("wrong role")
		}
	})
	if len(dst) != 0 {
		t.Fatalf("ids of text contents: got %v, want none", dst)
	}
	if allocs != 0 {
		t.Errorf("Calls, Results and Role of text contents: got %v allocations, want 0", allocs)
	}
	// Calls still read contents with calls, in either spelling.
	call := []byte(`{"role":"model","parts":[{"text":"x"},{"function_call":{"id":"c1","name":"f","args":{}}}]}`)
	if got := c.Calls(nil, call); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("Calls of a snake_case call: got %v, want [c1]", got)
	}
	// And through a \u escape of the member's name, which the byte checks
	// must not take for an absent member.
	escaped := []byte(`{"role":"model","parts":[{"function\u0043all":{"id":"c2","name":"f","args":{}}}]}`)
	if got := c.Calls(nil, escaped); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("Calls of an escaped functionCall: got %v, want [c2]", got)
	}
	result := []byte(`{"role":"user","parts":[{"function\u0052esponse":{"id":"c2","name":"f","response":{}}}]}`)
	if got := c.Results(nil, result); !slices.Equal(got, []string{"c2"}) || c.Role(result) != wire.RoleTool {
		t.Errorf("an escaped functionResponse: results %v, role %q; want [c2], %q", got, c.Role(result), wire.RoleTool)
	}
}
