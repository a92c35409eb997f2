package messages

import (
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// Calls and Results skip the parse of a message that cannot hold a
// tool_use or tool_result block (most of them): whatever the spelling,
// they answer what the parse reads.
func TestCallsAndResultsHoweverSpelled(t *testing.T) {
	for _, tt := range []struct {
		name, raw      string
		calls, results []string
	}{
		{"text", `{"role":"assistant","content":"The trend holds."}`, nil, nil},
		{"a call", `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`, []string{"t1"}, nil},
		{"a call's type escaped", `{"role":"assistant","content":[{"type":"tool\u005fuse","id":"t1","name":"f","input":{}}]}`, []string{"t1"}, nil},
		{"a call spaced", `{"role" : "assistant", "content" : [ { "type" : "tool_use" , "id" : "t1" } ]}`, []string{"t1"}, nil},
		{"a result", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, nil, []string{"t1"}},
		{"a result's type escaped", `{"role":"user","content":[{"type":"\u0074ool_result","tool_use_id":"t1","content":"ok"}]}`, nil, []string{"t1"}},
		{"a result beside text", `{"role":"user","content":[{"type":"text","text":"and"},{"type":"tool_result","tool_use_id":"t2"}]}`, nil, []string{"t2"}},
		{"types named in text", `{"role":"assistant","content":"a \"tool_use\" block answers a \"tool_result\" one"}`, nil, nil},
		{"a call in a user message", `{"role":"user","content":[{"type":"tool_use","id":"t1"}]}`, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			prototest.IDs(t, Codec{}, raw, tt.calls, tt.results)
			// The parse alone reads the same.
			if got := appendIDs(nil, parse(raw), roleAssistant, typeToolUse, "id"); !slices.Equal(got, tt.calls) {
				t.Errorf("the parse's calls: got %q, want %q", got, tt.calls)
			}
			if got := appendIDs(nil, parse(raw), roleUser, typeToolResult, "tool_use_id"); !slices.Equal(got, tt.results) {
				t.Errorf("the parse's results: got %q, want %q", got, tt.results)
			}
		})
	}
}

// BenchmarkCallsAndResultsOfText is what curation pays for each stored
// text message of a conversation on every request.
func BenchmarkCallsAndResultsOfText(b *testing.B) {
	raw := []byte(`{"role":"assistant","content":"` + strings.Repeat(`The "trend" holds, and the figures say so. `, 14) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if len((Codec{}).Calls(nil, raw))+len((Codec{}).Results(nil, raw)) != 0 {
			b.Fatal("found a call")
		}
	}
}

// BenchmarkDecodeText is what translating a stored text message to
// another protocol costs before it is encoded.
func BenchmarkDecodeText(b *testing.B) {
	raw := []byte(`{"role":"user","content":"` + strings.Repeat(`The trend holds, and the figures say so. `, 14) + `"}`)
	b.ReportAllocs()
	for b.Loop() {
		if m, err := (Codec{}).Decode(raw); err != nil || len(m.Parts) != 1 {
			b.Fatal(m, err)
		}
	}
}
