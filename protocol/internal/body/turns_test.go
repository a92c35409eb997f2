package body

import (
	"strconv"
	"testing"

	"github.com/recallproxy/recall/wire"
)

func TestTurnsEncode(t *testing.T) {
	ends := 0
	turns := Turns{
		Package:   "test",
		Assistant: "model",
		Instruction: func(dst []byte, m wire.Message) []byte {
			return append(dst, "instruction:"+m.Parts[0].Text...)
		},
		Part: func(role string, p wire.Part) ([]byte, bool, error) {
			if p.Text == "" && p.Kind == wire.Text {
				return nil, false, nil
			}
			return strconv.AppendQuote(nil, role+"/"+p.Text), p.Kind == wire.ToolResult, nil
		},
		Member: "parts",
		End:    func() { ends++ },
	}
	text := func(s string) wire.Part { return wire.Part{Kind: wire.Text, Text: s} }
	msgs := []wire.Message{
		{Role: wire.RoleSystem, Parts: []wire.Part{text("be brief")}},
		{Role: wire.RoleUser, Parts: []wire.Part{text("hi")}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{text("calling"), {Kind: wire.ToolCall, Text: "c1"}}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, Text: "r1"}}},
		{Role: wire.RoleUser, Parts: []wire.Part{text("and?")}},
		{Role: wire.RoleTool, Parts: []wire.Part{{Kind: wire.ToolResult, Text: "r2"}}},
		{Role: wire.RoleAssistant, Parts: []wire.Part{text("")}},
		{Role: wire.RoleDeveloper, Parts: []wire.Part{text("now")}},
	}
	got, err := turns.Encode(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"instruction:be brief",
		`{"role":"user","parts":["user/hi"]}`,
		`{"role":"model","parts":["model/calling","model/c1"]}`,
		`{"role":"user","parts":["user/r1","user/r2","user/and?"]}`, // one user message, results first
		"instruction:now",                                           // the empty assistant message is not written
	}
	if len(got) != len(want) {
		t.Fatalf("got %d messages %q, want %q", len(got), got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("message %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if ends != 7 {
		t.Errorf("End called %d times, want 7 (before each instruction, at each change of role, at the end)", ends)
	}

	_, err = turns.Encode(nil, []wire.Message{{Role: "narrator"}})
	if err == nil || err.Error() != `test: encode: unknown role "narrator"` {
		t.Errorf("unknown role: got %v, want test: encode: unknown role \"narrator\"", err)
	}
}
