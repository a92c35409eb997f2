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

// A commit whose first new message carries Opening remembers where the
// client's context began (Meta.Session), and no record keeps the flag; a
// later commit without it leaves the session as it was; a supersede that
// reaches back past its start forgets it.
func TestApplyRemembersWhereTheContextBegan(t *testing.T) {
	opening := func(m Message) Message { m.Flags |= Opening; return m }
	m, writes := Apply(Meta{}, Change{Append: []Message{opening(User("q1")), Asst("a1")}, Now: 1}, nil)
	if s := m.Session; s.From != 1 || s.Before != (Boundary{}) || s.Messages != 0 {
		t.Fatalf("first context: got session %+v, want from 1, nothing before", s)
	}
	if writes[0].Flags != 0 {
		t.Errorf("the opening message is written with flags %d, want 0", writes[0].Flags)
	}
	m, _ = Apply(m, Change{Append: []Message{opening(User("q2")), Asst("a2")}, Now: 2}, nil)
	want := Session{From: 3, Before: Boundary{Seq: 2, Turn: 1}, Messages: 2, Tokens: m.Session.Tokens}
	if s := m.Session; s != want {
		t.Fatalf("second context: got session %+v, want %+v", s, want)
	}
	m, _ = Apply(m, Change{Append: []Message{User("q3"), Asst("a3")}, Now: 3}, nil)
	if s := m.Session; s != want {
		t.Errorf("a commit that resent stored messages: got session %+v, want %+v", s, want)
	}
	m, _ = Apply(m, Change{Supersede: &Boundary{Seq: 4, Turn: 2}}, nil)
	if s := m.Session; s != want {
		t.Errorf("a supersede inside the context: got session %+v, want %+v", s, want)
	}
	m, _ = Apply(m, Change{Supersede: &Boundary{Seq: 1, Turn: 1}, Append: []Message{Asst("a1 again")}}, nil)
	if m.Session.Known() {
		t.Errorf("a supersede from before the context: got session %+v, want none", m.Session)
	}
}
