package chat

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// toolCallChunk is a chunk carrying one fragment of the call at index:
// its id, type and name when first, a piece of its arguments after.
func toolCallChunk(index int, first bool, piece string) []byte {
	if first {
		return fmt.Appendf(nil, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"f%d","arguments":%q}}]}}]}`, index, index, index, piece)
	}
	return fmt.Appendf(nil, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"function":{"arguments":%q}}]}}]}`, index, piece)
}

// Tool calls are assembled by their stream index, whatever order the
// fragments arrive in, and listed by index: the same message as when they
// arrive in order.
func TestAssemblerToolCallsInAnyOrder(t *testing.T) {
	const n = 3 * manyCalls // past the scan, into the map
	type frag struct {
		index int
		first bool
		piece string
	}
	var inOrder []frag
	for i := range n {
		inOrder = append(inOrder, frag{i, true, `{"a":`}, frag{i, false, fmt.Sprint(i)}, frag{i, false, `}`})
	}
	var want Assembler
	for _, f := range inOrder {
		if err := want.Add(toolCallChunk(f.index, f.first, f.piece)); err != nil {
			t.Fatal(err)
		}
	}
	wantMsg := string(want.Reply().Message)

	descending := make([]frag, 0, len(inOrder))
	for i := n - 1; i >= 0; i-- {
		descending = append(descending, inOrder[3*i:3*i+3]...)
	}
	// Interleaved: every call's first fragment, then the others by round,
	// the calls shuffled (a call's own fragments stay in order).
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	var interleaved []frag
	for round := range 3 {
		for _, i := range perm {
			interleaved = append(interleaved, inOrder[3*i+round])
		}
	}
	tests := []struct {
		name  string
		frags []frag
		// replyAt calls Reply after this many fragments too (0: never), as
		// nothing forbids: the order Reply sorts must not lose a call.
		replyAt int
	}{
		{"ascending", inOrder, 0},
		{"descending", descending, 0},
		{"interleaved", interleaved, 0},
		{"interleaved, Reply midway", interleaved, 2 * n},
		{"descending, Reply midway", descending, len(descending) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Assembler
			for i, f := range tt.frags {
				if i == tt.replyAt && i > 0 {
					a.Reply()
				}
				if err := a.Add(toolCallChunk(f.index, f.first, f.piece)); err != nil {
					t.Fatal(err)
				}
			}
			if got := string(a.Reply().Message); got != wantMsg {
				t.Errorf("got message\n%s\nwant\n%s", got, wantMsg)
			}
		})
	}
}
