package history

import (
	"slices"
	"testing"
)

// snapshotOf commits each change in turn over an empty conversation and
// returns the whole conversation as Load would (every message read).
func snapshotOf(changes ...Change) Snapshot {
	var m Meta
	var all []Message
	for _, c := range changes {
		var superseded []Message
		if c.Supersede != nil {
			for _, s := range all {
				if s.Seq > c.Supersede.Seq && m.FlagsAt(s.Seq) == 0 {
					superseded = append(superseded, s)
				}
			}
		}
		var writes []Message
		m, writes = Apply(m, c, superseded)
		for _, w := range writes {
			if w.Seq <= uint64(len(all)) {
				all[w.Seq-1] = w
			} else {
				all = append(all, w)
			}
		}
	}
	var tail []Message
	for _, s := range all {
		if m.FlagsAt(s.Seq) == 0 {
			tail = append(tail, s)
		}
	}
	return Snapshot{Meta: m, Tail: tail, Complete: true}
}

func TestApplyRemembersTheLastExchange(t *testing.T) {
	first := Change{Append: []Message{User("q1"), Asst("a1")}, Now: 1, Exchange: &ExchangeID{Hash: 7}}
	snap := snapshotOf(first, Change{Append: []Message{User("q2"), Asst("a2")}, Now: 2, Exchange: &ExchangeID{Key: 3, Hash: 9}})
	want := Exchange{ExchangeID: ExchangeID{Key: 3, Hash: 9}, From: 3, Messages: 2, Before: Boundary{Seq: 2, Turn: 1}, Turns: 1, Tokens: snap.Tail[0].Tokens + snap.Tail[1].Tokens}
	if snap.Meta.Last == nil || *snap.Meta.Last != want {
		t.Fatalf("got last %+v, want %+v", snap.Meta.Last, want)
	}
	// Any other change forgets it: only the newest commit can be retried.
	other := snapshotOf(first, Change{Append: []Message{User("q2")}, Now: 2})
	if other.Meta.Last != nil {
		t.Errorf("got last %+v after a change that is no exchange, want nil", other.Meta.Last)
	}
}

func TestMergeRetry(t *testing.T) {
	q1, a1, q2, a2 := User("q1"), Asst("a1"), User("q2"), Asst("a2")
	first := Change{Append: []Message{q1, a1}, Now: 1, Exchange: &ExchangeID{Key: 5, Hash: HashMessages([]Message{q1})}}
	second := Change{Append: []Message{q2, a2}, Now: 2, Exchange: &ExchangeID{Key: 6, Hash: HashMessages([]Message{q2})}}
	snap := snapshotOf(first, second)
	tests := []struct {
		name         string
		in           []Message
		retry        Retry
		wantReplaced bool
		wantHistory  []string
		wantNew      int
		wantSuper    *Boundary
	}{
		{name: "marked, same message", in: []Message{q2}, retry: Retry{Marked: true}, wantReplaced: true,
			wantHistory: []string{"user", "assistant"}, wantNew: 1, wantSuper: &Boundary{Seq: 2, Turn: 1}},
		{name: "marked, whole conversation resent", in: []Message{q1, a1, q2}, retry: Retry{Marked: true}, wantReplaced: true,
			wantHistory: []string{"user", "assistant"}, wantNew: 1, wantSuper: &Boundary{Seq: 2, Turn: 1}},
		{name: "same key", in: []Message{q2}, retry: Retry{Key: 6}, wantReplaced: true,
			wantHistory: []string{"user", "assistant"}, wantNew: 1, wantSuper: &Boundary{Seq: 2, Turn: 1}},
		{name: "key of an older exchange", in: []Message{q2}, retry: Retry{Key: 5},
			wantHistory: []string{"user", "assistant", "user", "assistant"}, wantNew: 1},
		{name: "marked, other message", in: []Message{User("q3")}, retry: Retry{Marked: true},
			wantHistory: []string{"user", "assistant", "user", "assistant"}, wantNew: 1},
		{name: "not marked", in: []Message{q2},
			wantHistory: []string{"user", "assistant", "user", "assistant"}, wantNew: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, replaced, err := MergeRetry(Auto, Number(tt.in, 100), snap, nil, tt.retry)
			if err != nil {
				t.Fatal(err)
			}
			if replaced != tt.wantReplaced {
				t.Errorf("got replaced %v, want %v", replaced, tt.wantReplaced)
			}
			if got := Roles(m.History); !slices.Equal(got, tt.wantHistory) {
				t.Errorf("got history %v, want %v", got, tt.wantHistory)
			}
			if len(m.New) != tt.wantNew {
				t.Errorf("got %d new messages, want %d", len(m.New), tt.wantNew)
			}
			switch {
			case tt.wantSuper == nil && m.Supersede != nil:
				t.Errorf("got supersede %+v, want none", *m.Supersede)
			case tt.wantSuper != nil && (m.Supersede == nil || *m.Supersede != *tt.wantSuper):
				t.Errorf("got supersede %+v, want %+v", m.Supersede, *tt.wantSuper)
			}
		})
	}
}
