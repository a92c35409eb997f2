package chat

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/wire"
)

// A delta's "tool_calls":null, as some OpenAI-compatible servers send
// beside text, starts no tool call on the way to another protocol's
// client, as it records none (TestAssembler).
func TestSeamNullToolCallsStartNoCall(t *testing.T) {
	asm := Protocol{}.NewAssembler()
	var kinds []wire.DeltaKind
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"hi","tool_calls":null}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	} {
		ds, _, err := asm.Event(nil, nil, []byte(c))
		if err != nil {
			t.Fatalf("Event(%s): %v", c, err)
		}
		for _, d := range ds {
			kinds = append(kinds, d.Kind)
			if d.Kind == wire.ToolCallStart && d.CallID != "c1" {
				t.Errorf("a call started with id %q", d.CallID)
			}
		}
	}
	want := []wire.DeltaKind{wire.TextDelta, wire.ToolCallStart, wire.ArgumentsDelta, wire.Finish}
	if !slices.Equal(kinds, want) {
		t.Errorf("deltas %v, want %v", kinds, want)
	}
}
