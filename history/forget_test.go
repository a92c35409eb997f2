package history_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/recallproxy/recall/history"
)

func TestForget(t *testing.T) {
	// Seqs: 1 user, 2 calls(a,b), 3 tool(a), 4 tool(b), 5 assistant,
	// 6 user, 7 assistant; turns 1 1 1 1 1 2 2.
	msgs := numbered(history.User("q1"), history.Calls("", "a", "b"), history.Tool("a", "ra"), history.Tool("b", "rb"),
		history.Asst("a1"), history.User("q2"), history.Asst("a2"))
	tests := []struct {
		instruction string
		want        []uint64
		wantErr     bool
	}{
		{instruction: "oldest", want: []uint64{1}},
		{instruction: "position:3", want: []uint64{2, 3, 4}}, // a result takes its call and the call's other results
		{instruction: "position:2", want: []uint64{2, 3, 4}}, // a call takes its results
		{instruction: "position:7", want: []uint64{7}},
		{instruction: "position:8"},
		{instruction: "before:turn_2", want: []uint64{1, 2, 3, 4, 5}},
		{instruction: "before:turn_1"},
		{instruction: "speaker:user", want: []uint64{1, 6}},
		{instruction: "speaker:tool", want: []uint64{2, 3, 4}},
		{instruction: "speaker:assistant", want: []uint64{2, 3, 4, 5, 7}},
		{instruction: "speaker:system", wantErr: true},
		{instruction: "position:0", wantErr: true},
		{instruction: "before:2", wantErr: true},
		{instruction: "newest", wantErr: true},
		{instruction: "oldest:2", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.instruction, func(t *testing.T) {
			got, err := history.Forget(msgs, tt.instruction)
			if tt.wantErr {
				if !errors.Is(err, history.ErrInstruction) {
					t.Fatalf("got %v, %v; want ErrInstruction", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if got := history.Ranges([]uint64{2, 3, 4, 7, 9, 10}); !slices.Equal(got, []history.Range{{From: 2, To: 4}, {From: 7, To: 7}, {From: 9, To: 10}}) {
		t.Errorf("Ranges: got %v", got)
	}
}

// Whatever a random instruction forgets in a random conversation, the
// messages left never hold a tool call without the results it had, nor a
// result without its call: forgetting makes no context invalid that was
// valid.
func TestForgetKeepsToolPairing(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	instructions := []string{"oldest", "before:turn_2", "before:turn_5", "speaker:user", "speaker:assistant", "speaker:tool",
		"position:1", "position:2", "position:3", "position:5", "position:8"}
	for trace := range 300 {
		c := &client{r: r}
		var all []history.Message
		for range 1 + r.IntN(12) {
			in, _ := c.next()
			all = append(all, in...)
			a := c.answer()
			c.view = append(c.view, a)
			all = append(all, a)
		}
		msgs := numbered(all...)
		instruction := instructions[r.IntN(len(instructions))]
		seqs, err := history.Forget(msgs, instruction)
		if err != nil {
			t.Fatal(err)
		}
		var left []history.Message
		for _, m := range msgs {
			if !slices.Contains(seqs, m.Seq) {
				left = append(left, m)
			}
		}
		// What repair removes from the messages left, it removed from the
		// whole: forgetting broke no pair.
		_, before := history.Repair(msgs, nil)
		_, after := history.Repair(left, nil)
		if after > before {
			t.Fatalf("trace %d, %s: forgetting %v left %d repairs to make, %d before\n%v", trace, instruction, seqs, after, before, history.Roles(left))
		}
	}
}

// numbered gives msgs the sequence numbers and turns a store would.
func numbered(msgs ...history.Message) []history.Message {
	_, writes := history.Apply(history.Meta{}, history.Change{Append: msgs, Now: 1}, nil)
	return writes
}
