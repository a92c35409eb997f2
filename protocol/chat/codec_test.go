package chat

import (
	"testing"

	"github.com/recallproxy/recall/protocol/internal/prototest"
	"github.com/recallproxy/recall/wire"
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

// TestCodecRoundTrip: a message decoded to the canonical model and encoded
// again says the same (its canonical hash is unchanged).
func TestCodecRoundTrip(t *testing.T) {
	var c Codec
	for _, raw := range []string{
		`{"role":"user","content":"hello"}`,
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"B","type":"function","function":{"name":"g","arguments":"{}"}}]}`,
		`{"role":"assistant","content":"sure","tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"role":"assistant","content":null,"refusal":"no"}`,
		`{"role":"tool","tool_call_id":"A","content":"42"}`,
		`{"role":"system","content":"be brief"}`,
	} {
		m, err := c.Decode([]byte(raw))
		if err != nil {
			t.Fatalf("Decode(%s): %v", raw, err)
		}
		out, err := c.Encode(nil, []wire.Message{m})
		if err != nil || len(out) != 1 {
			t.Fatalf("Encode(%s): got %d messages, %v; want 1", raw, len(out), err)
		}
		if Hash(out[0]) != Hash([]byte(raw)) {
			t.Errorf("round trip of %s: got %s", raw, out[0])
		}
	}
}

// TestDecodeReadsMembersInAnyOrder: Decode reads a message's members in
// one pass: their order in the JSON does not change the parts' (text,
// refusal, calls), and the first of a repeated key counts, as for
// gjson.Get.
func TestDecodeReadsMembersInAnyOrder(t *testing.T) {
	raw := `{"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":"no",` +
		`"content":"first","role":"assistant","content":"second","role":"user"}`
	m, err := Codec{}.Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != RoleAssistant || len(m.Parts) != 3 ||
		m.Parts[0].Kind != wire.Text || m.Parts[0].Text != "first" ||
		m.Parts[1].Kind != wire.Refusal || m.Parts[1].Text != "no" ||
		m.Parts[2].Kind != wire.ToolCall || m.Parts[2].CallID != "A" || m.Parts[2].Name != "f" {
		t.Errorf("got %s %+v", m.Role, m.Parts)
	}
	if _, err := (Codec{}).Decode([]byte(`{"content":"x"}`)); err == nil {
		t.Error("a message without a role decoded")
	}
}

// TestTextReadsMembersInAnyOrder: Text writes a message's content, its
// refusal and its tool calls in that order whatever the members' order,
// and of a repeated member the first, as Decode reads them.
func TestTextReadsMembersInAnyOrder(t *testing.T) {
	raw := `{"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}}],"refusal":"no",` +
		`"content":"first","role":"assistant","content":"second","refusal":"again"}`
	if got, want := string((Codec{}).Text(nil, []byte(raw))), "first\nno\nf\n{}"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got := (Codec{}).Text(nil, []byte(`["content","x"]`)); len(got) != 0 {
		t.Errorf("Text of an array = %q, want none", got)
	}
}

// TestCodecEncodesResultsAsToolMessages: a canonical message carrying
// several results (as Anthropic sends them) is one tool message each.
func TestCodecEncodesResultsAsToolMessages(t *testing.T) {
	m := wire.Message{Role: wire.RoleTool, Parts: []wire.Part{
		{Kind: wire.ToolResult, CallID: "A", Text: "1"}, {Kind: wire.ToolResult, CallID: "B", Text: "2"},
		{Kind: wire.Opaque, Origin: wire.Messages, Raw: []byte(`{"type":"thinking"}`)}}}
	out, err := Codec{}.Encode(nil, []wire.Message{m})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"role":"tool","tool_call_id":"A","content":"1"}`, `{"role":"tool","tool_call_id":"B","content":"2"}`}
	if len(out) != len(want) {
		t.Fatalf("got %d messages %q, want %q", len(out), out, want)
	}
	for i := range want {
		if string(out[i]) != want[i] {
			t.Errorf("message %d: got %s, want %s", i, out[i], want[i])
		}
	}
}

// TestCodecKeepCalls: calls are filtered, a tool message is kept or not,
// and a message left with nothing is dropped.
func TestCodecKeepCalls(t *testing.T) {
	var c Codec
	two := []byte(`{"role":"assistant","content":null,"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"B","type":"function","function":{"name":"g","arguments":"{}"}}]}`)
	out, ok := c.KeepCalls(two, func(id string) bool { return id == "B" })
	if got := c.Calls(nil, out); !ok || len(got) != 1 || got[0] != "B" {
		t.Errorf("keep B: got %v %v, want [B] true", got, ok)
	}
	if _, ok := c.KeepCalls(two, func(string) bool { return false }); ok {
		t.Error("keep none of a message with no content: got true, want false")
	}
	tool := []byte(`{"role":"tool","tool_call_id":"A","content":"x"}`)
	if _, ok := c.KeepCalls(tool, func(id string) bool { return id == "A" }); !ok {
		t.Error("keep a result: got false, want true")
	}
	if _, ok := c.KeepCalls(tool, func(string) bool { return false }); ok {
		t.Error("drop a result: got true, want false")
	}
	if got := c.Results(nil, tool); len(got) != 1 || got[0] != "A" {
		t.Errorf("Results: got %v, want [A]", got)
	}
	if got := c.Results(nil, []byte(`{"role":"user","content":"tool_call_id"}`)); len(got) != 0 {
		t.Errorf("Results of a user message: got %v, want none", got)
	}
}

func TestRolesOwnNothing(t *testing.T) {
	prototest.RolesOwnNothing(t, Codec{}, []string{
		`{"role":"assistant","content":"hi"}`,
		`{"role":"user","content":[{"type":"text","text":"x"}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"42"}`,
	})
}
