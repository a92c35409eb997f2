package messages

import (
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
)

// idCases are messages spelled in the ways the skip must see through,
// with the ids the parse reads of them.
var idCases = []prototest.IDCase{
	{Name: "text", Raw: `{"role":"assistant","content":"The trend holds."}`},
	{Name: "a call", Raw: `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`, Calls: []string{"t1"}},
	{Name: "a call's type escaped", Raw: `{"role":"assistant","content":[{"type":"tool\u005fuse","id":"t1","name":"f","input":{}}]}`, Calls: []string{"t1"}},
	{Name: "a call spaced", Raw: `{"role" : "assistant", "content" : [ { "type" : "tool_use" , "id" : "t1" } ]}`, Calls: []string{"t1"}},
	{Name: "a result", Raw: `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`, Results: []string{"t1"}},
	{Name: "a result's type escaped", Raw: `{"role":"user","content":[{"type":"\u0074ool_result","tool_use_id":"t1","content":"ok"}]}`, Results: []string{"t1"}},
	{Name: "a result beside text", Raw: `{"role":"user","content":[{"type":"text","text":"and"},{"type":"tool_result","tool_use_id":"t2"}]}`, Results: []string{"t2"}},
	{Name: "types named in text", Raw: `{"role":"assistant","content":"a \"tool_use\" block answers a \"tool_result\" one"}`},
	{Name: "a call in a user message", Raw: `{"role":"user","content":[{"type":"tool_use","id":"t1"}]}`},
}

// Calls and Results skip the parse of a message that cannot hold a
// tool_use or tool_result block (most of them): whatever the spelling,
// they answer what the parse reads.
func TestCallsAndResultsHoweverSpelled(t *testing.T) {
	prototest.IDTable(t, Codec{}, idCases)
}

// The parse alone reads the ids idCases name.
func TestParseReadsTheIDsHoweverSpelled(t *testing.T) {
	for _, tc := range idCases {
		raw := parse([]byte(tc.Raw))
		if got := appendIDs(nil, raw, roleAssistant, typeToolUse, "id"); !slices.Equal(got, tc.Calls) {
			t.Errorf("%s: the parse's calls: got %q, want %q", tc.Name, got, tc.Calls)
		}
		if got := appendIDs(nil, raw, roleUser, typeToolResult, "tool_use_id"); !slices.Equal(got, tc.Results) {
			t.Errorf("%s: the parse's results: got %q, want %q", tc.Name, got, tc.Results)
		}
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
	prototest.BenchDecode(b, Codec{}, raw, 1)
}
