package pipeline

import (
	"strings"
	"testing"

	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/wire"
)

// TestInPlaceInstructionsStayWhereTheClientPutThem: Claude Code's system
// message inside messages goes back right after the message it followed,
// even when that message and the ones after it are already stored (a
// resend), never between a tool_use and its tool_result.
func TestInPlaceInstructionsStayWhereTheClientPutThem(t *testing.T) {
	a := []byte(`{"role":"user","content":"A"}`)
	sys := []byte(`{"role":"system","content":"S"}`)
	sys2 := []byte(`{"role":"system","content":"S2"}`)
	b := []byte(`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`)
	c := []byte(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r"}]}`)
	planned := []plan.Message{
		{Kind: plan.Instruction, Protocol: wire.Messages, Raw: []byte(`{"role":"system","content":"I"}`)},
		{Kind: plan.History, Protocol: wire.Messages, Raw: a},
		{Kind: plan.History, Protocol: wire.Messages, Raw: b},
		{Kind: plan.New, Protocol: wire.Messages, Raw: c},
	}
	text := func(ms []plan.Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.Raw))
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		name string
		msgs [][]byte
		in   []int
		want [][]byte
	}{
		{"after the stored message it followed", [][]byte{a, sys, b, c}, []int{1}, [][]byte{a, sys, b, c}},
		{"two in a row keep their order", [][]byte{a, sys, sys2, b, c}, []int{1, 2}, [][]byte{a, sys, sys2, b, c}},
		{"first of all: after the instructions", [][]byte{sys, a, b, c}, []int{0}, [][]byte{sys, a, b, c}},
		{"after the new message it followed", [][]byte{a, b, c, sys}, []int{3}, [][]byte{a, b, c, sys}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InPlace(planned, wire.Messages, &wire.Request{Messages: tt.msgs, InPlace: tt.in})
			want := append([]plan.Message{planned[0]}, nil...)
			for _, w := range tt.want {
				want = append(want, plan.Message{Raw: w})
			}
			if text(got) != text(want) {
				t.Errorf("got %s\nwant %s", text(got), text(want))
			}
		})
	}
}
