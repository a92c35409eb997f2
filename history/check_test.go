package history

import (
	"errors"
	"testing"
)

func TestCheckNew(t *testing.T) {
	tests := []struct {
		name       string
		hist, new  []Message
		wantOrphan int // -1: none
	}{
		{name: "plain turn", new: []Message{User("q")}, wantOrphan: -1},
		{name: "lone tool result", new: []Message{Tool("nope", "x")}, wantOrphan: 0},
		{name: "result of a stored call", hist: []Message{User("q"), Calls("", "c1")}, new: []Message{Tool("c1", "x")}, wantOrphan: -1},
		{name: "second result of a stored call", hist: []Message{User("q"), Calls("", "c1", "c2"), Tool("c1", "x")}, new: []Message{Tool("c2", "y")}, wantOrphan: -1},
		{name: "wrong id after a stored call", hist: []Message{User("q"), Calls("", "c1")}, new: []Message{Tool("c9", "x")}, wantOrphan: 0},
		{name: "stored call already closed by a user message", hist: []Message{User("q"), Calls("", "c1"), Tool("c1", "x"), Asst("a")}, new: []Message{Tool("c1", "x")}, wantOrphan: 0},
		{name: "calls and results in the request", new: []Message{User("q"), Calls("", "c1"), Tool("c1", "x"), User("q2")}, wantOrphan: -1},
		{name: "result after a later user message", new: []Message{User("q"), Calls("", "c1"), User("q2"), Tool("c1", "x")}, wantOrphan: 3},
		{name: "wrong id after a new call", new: []Message{User("q"), Calls("", "c1"), Tool("c2", "x")}, wantOrphan: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNew(tt.hist, tt.new)
			var oe *OrphanResultError
			switch {
			case tt.wantOrphan < 0 && err != nil:
				t.Fatalf("got %v, want nil", err)
			case tt.wantOrphan >= 0 && (!errors.As(err, &oe) || oe.Index != tt.wantOrphan):
				t.Fatalf("got %v, want an orphan at %d", err, tt.wantOrphan)
			}
		})
	}
}
