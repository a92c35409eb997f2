package history

import (
	"errors"
	"testing"
)

func TestApplySupersedeCounters(t *testing.T) {
	tests := []struct {
		name      string
		stored    []Message
		boundary  Boundary
		wantTurns int
		wantMsgs  int
	}{
		{"mid-turn", []Message{User("q1"), Asst("a1"), User("q2"), Asst("a2")}, Boundary{Seq: 3, Turn: 2}, 2, 3},
		{"at a turn end", []Message{User("q1"), Asst("a1"), User("q2"), Asst("a2")}, Boundary{Seq: 2, Turn: 1}, 1, 2},
		{"everything", []Message{User("q1"), Asst("a1"), User("q2")}, Boundary{}, 0, 0},
		{"everything, history opened by an assistant", []Message{Asst("hello"), User("q1"), Asst("a1")}, Boundary{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, writes := Apply(Meta{}, Change{Append: tt.stored, Now: 1}, nil)
			var after []Message
			for _, w := range writes {
				if w.Seq > tt.boundary.Seq {
					after = append(after, w)
				}
			}
			m, _ = Apply(m, Change{Supersede: &tt.boundary}, after)
			if m.Turns != tt.wantTurns || m.Messages != tt.wantMsgs || m.LastTurn != tt.boundary.Turn {
				t.Errorf("got turns %d messages %d last turn %d, want %d, %d and %d", m.Turns, m.Messages, m.LastTurn, tt.wantTurns, tt.wantMsgs, tt.boundary.Turn)
			}
			if want := tt.boundary.Seq + 1; m.Gaps[0].From != want || m.Gaps[0].To != uint64(len(tt.stored)) {
				t.Errorf("got gaps %v, want [%d, %d]", m.Gaps, want, len(tt.stored))
			}
		})
	}
}

// An import lands only in an empty conversation, whatever Version says.
func TestCheckImportOnlyIntoEmpty(t *testing.T) {
	c := Change{Import: true, Append: []Message{User("q")}}
	if err := c.Check(&Meta{}); err != nil {
		t.Errorf("into an empty conversation: got %v, want nil", err)
	}
	m, _ := Apply(Meta{}, Change{Append: []Message{User("q")}, Now: 1}, nil)
	c.Version = m.Version
	if err := c.Check(&m); !errors.Is(err, ErrConflict) {
		t.Errorf("into a conversation at its version: got %v, want ErrConflict", err)
	}
}
