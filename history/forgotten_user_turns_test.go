package history

import (
	"slices"
	"testing"
)

// A stored turn whose user message was forgotten is still a turn of its
// own, as the store counts it (Meta.Turns): the window neither merges it
// into the turn before nor reports more stored turns than it holds.
func TestNewWindowKeepsTurnsWhoseUserMessageWasForgotten(t *testing.T) {
	tests := []struct {
		name      string
		hist      []Message
		forget    []int // positions in hist removed after numbering
		fresh     []Message
		wantSizes []int
		wantSeqs  []uint64
	}{
		{
			name:      "every user message forgotten",
			hist:      []Message{User("q1"), Asst("a1"), User("q2"), Asst("a2"), User("q3"), Asst("a3")},
			forget:    []int{0, 2, 4},
			fresh:     []Message{User("q4")},
			wantSizes: []int{1, 1, 1, 1}, wantSeqs: []uint64{2, 4, 6, 7},
		},
		{
			name:      "a tool exchange keeps its results",
			hist:      []Message{User("q1"), Calls("", "A"), Tool("A", "r"), Asst("a1"), User("q2"), Asst("a2")},
			forget:    []int{0, 4},
			fresh:     []Message{User("q3")},
			wantSizes: []int{3, 1, 1}, wantSeqs: []uint64{2, 6, 7},
		},
		{
			name:      "a tool result continues the last stored turn",
			hist:      []Message{User("q1"), Asst("a1"), User("q2"), Calls("", "A")},
			forget:    []int{2},
			fresh:     []Message{Tool("A", "r")},
			wantSizes: []int{2, 2}, wantSeqs: []uint64{1, 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := Number(append(slices.Clone(tt.hist), tt.fresh...), 1)
			var hist []Message
			for i, m := range all[:len(tt.hist)] {
				if !slices.Contains(tt.forget, i) {
					hist = append(hist, m)
				}
			}
			fresh := all[len(tt.hist):]
			for i := range fresh {
				fresh[i].Turn = 0 // not stored yet
			}
			turns := map[uint32]bool{}
			for _, m := range hist {
				turns[m.Turn] = true
			}
			w := NewWindow(hist, fresh, 0, len(turns))
			if got := turnSizes(w); !slices.Equal(got, tt.wantSizes) {
				t.Errorf("got turn sizes %v, want %v", got, tt.wantSizes)
			}
			if got := turnSeqs(w); !slices.Equal(got, tt.wantSeqs) {
				t.Errorf("got turn seqs %v, want %v", got, tt.wantSeqs)
			}
			if got, want := w.Report.StoredTurns, len(w.Turns); got != want {
				t.Errorf("got StoredTurns %d, want %d (the turns in the window)", got, want)
			}
		})
	}
}
