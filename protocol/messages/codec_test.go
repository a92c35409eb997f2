package messages

import (
	"slices"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
)

func TestRole(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"user string", `{"role":"user","content":"hi"}`, wire.RoleUser},
		{"user blocks", `{"role":"user","content":[{"type":"text","text":"hi"}]}`, wire.RoleUser},
		{"only tool results", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"x"},{"type":"tool_result","tool_use_id":"b"}]}`, wire.RoleTool},
		{"results and text", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"},{"type":"text","text":"go on"}]}`, wire.RoleUser},
		{"empty blocks", `{"role":"user","content":[]}`, wire.RoleUser},
		{"assistant", `{"role":"assistant","content":"ok"}`, wire.RoleAssistant},
		{"system in place", `{"role":"system","content":"be brief"}`, wire.RoleSystem},
		{"unknown role", `{"role":"tool","content":"x"}`, ""},
		{"not an object", `[1]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Codec{}).Role([]byte(tt.raw)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCallsAndResults(t *testing.T) {
	asst := []byte(`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"x"},{"type":"tool_use","id":"toolu_1","name":"a","input":{}},{"type":"tool_use","id":"toolu_2","name":"b","input":{}}]}`)
	user := []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"1"},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"2"}]},{"type":"text","text":"and?"}]}`)
	c := Codec{}
	if got, want := c.Calls(nil, asst), []string{"toolu_1", "toolu_2"}; !slices.Equal(got, want) {
		t.Errorf("Calls: got %q, want %q", got, want)
	}
	if got, want := c.Results(nil, user), []string{"toolu_1", "toolu_2"}; !slices.Equal(got, want) {
		t.Errorf("Results: got %q, want %q", got, want)
	}
	if got := c.Calls(nil, user); len(got) != 0 {
		t.Errorf("Calls of a user message: got %q, want none", got)
	}
	if got := c.Results(nil, asst); len(got) != 0 {
		t.Errorf("Results of an assistant message: got %q, want none", got)
	}
}

func TestKeepCalls(t *testing.T) {
	tests := []struct {
		name, raw string
		keep      []string
		want      string
		ok        bool
	}{
		{"all kept", `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}`, []string{"a"},
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}`, true},
		{"one dropped", `{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}],"extra":1}`, []string{"b"},
			`{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"b","name":"g","input":{}}],"extra":1}`, true},
		{"nothing left", `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]}`, nil,
			`{"role":"assistant","content":[]}`, false},
		{"thinking alone is nothing", `{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"},{"type":"tool_use","id":"a","name":"f","input":{}}]}`, nil,
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"d"}]}`, false},
		{"string content", `{"role":"assistant","content":"hi"}`, nil, `{"role":"assistant","content":"hi"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Codec{}.KeepCalls([]byte(tt.raw), func(id string) bool { return slices.Contains(tt.keep, id) })
			if string(got) != tt.want || ok != tt.ok {
				t.Errorf("got %s, %v; want %s, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCutResults(t *testing.T) {
	marker := func(kept, total int) string { return "[cut " + strconv.Itoa(kept) + "/" + strconv.Itoa(total) + "]" }
	tests := []struct {
		name, raw, want string
		cut             bool
	}{
		{"string content", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"héllo world"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"héllo\n[cut 5/11]"}]}`, true},
		{"text blocks", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"abcdefgh"},{"type":"image","source":{"type":"url","url":"u"}},{"type":"text","text":"ab"}],"is_error":true},{"type":"text","text":"a long user text"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"abcde\n[cut 5/8]"},{"type":"image","source":{"type":"url","url":"u"}},{"type":"text","text":"ab"}],"is_error":true},{"type":"text","text":"a long user text"}]}`, true},
		{"short enough", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"hello"}]}`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"hello"}]}`, false},
		{"user text is not a result", `{"role":"user","content":"a very long question"}`, `{"role":"user","content":"a very long question"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cut := Codec{}.CutResults([]byte(tt.raw), 5, marker)
			if string(got) != tt.want || cut != tt.cut {
				t.Errorf("got %s, %v; want %s, %v", got, cut, tt.want, tt.cut)
			}
		})
	}
}

func TestWithoutCacheHints(t *testing.T) {
	raw := []byte(`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"b","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`)
	want := `{"role":"user","content":[{"type":"text","text":"a"},{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"b"}]}]}`
	if got := (Codec{}).WithoutCacheHints(raw); string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestRegistered(t *testing.T) {
	if got := wire.For(wire.Messages).Name(); got != "messages" {
		t.Errorf("got %q, want messages", got)
	}
	if got := wire.Messages.String(); got != "messages" {
		t.Errorf("got %q, want messages", got)
	}
}

func TestRolesOwnNothing(t *testing.T) {
	prototest.RolesOwnNothing(t, Codec{}, []string{
		`{"role":"assistant","content":"hi"}`,
		`{"role":"user","content":[{"type":"text","text":"x"}]}`,
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"42"}]}`,
	})
}
