package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
)

// testErasureBeatsASummaryInFlight is the property that makes erasure
// final: a summary job reads the conversation (its Incarnation and Epoch),
// then, while it waits for the summariser, the conversation is deleted
// (and the id reused), hard- or soft-forgotten, or rewritten by a client;
// the summary it then tries to land is refused with ErrStale, so the
// erased text never reaches the stored summary, and the new
// conversation's turns are never marked as summarised.
func testErasureBeatsASummaryInFlight(t *testing.T, s history.Store) {
	secret := func(i int) []history.Message {
		return []history.Message{User("the vault code is 4711", 5), Asst("noted", 5), User("q2", 5), Asst("a2", 5),
			User("q3", 5), Asst("a3", 5)}[:i]
	}
	for _, tt := range []struct {
		name  string
		erase func(t *testing.T, k history.Key)
	}{
		{"delete and reuse the id", func(t *testing.T, k history.Key) {
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			// The new conversation is longer than the old one, so that
			// the summary's covered-through would pass on its own.
			MustCommit(t, s, k, history.Change{Append: Turns(1, 4)})
		}},
		{"hard forget", func(t *testing.T, k history.Key) { forgetFirst(t, s, k, true) }},
		{"soft forget", func(t *testing.T, k history.Key) { forgetFirst(t, s, k, false) }},
		{"supersede", func(t *testing.T, k history.Key) {
			MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{}, Append: Turns(7, 3)})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := history.Key{Tenant: "t", Conversation: "erase-" + strings.ReplaceAll(tt.name, " ", "-")}
			started := MustCommit(t, s, k, history.Change{Append: secret(6)})
			job := history.SummaryChange{Incarnation: started.Incarnation, Epoch: started.Epoch,
				Summary: history.Summary{Text: "the vault code is 4711", Through: 2, Turns: 1, Tokens: 9}}

			tt.erase(t, k)

			if _, err := s.Commit(ctx, k, history.Change{Summary: &job}); !errors.Is(err, history.ErrStale) {
				t.Fatalf("the job's summary landed after the erasure: got %v, want ErrStale", err)
			}
			snap, err := s.Load(ctx, k, history.Query{MinMessages: 100, Summarized: true})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Meta.Summary != nil {
				t.Errorf("stored summary %+v, want none", snap.Meta.Summary)
			}
			if len(snap.Tail) != snap.Meta.Messages {
				t.Errorf("a summarised load read %d of %d active messages: turns hidden by a summary", len(snap.Tail), snap.Meta.Messages)
			}
			// A job that starts now lands.
			if _, err := Land(s, k, history.SummaryChange{Summary: history.Summary{Text: "fresh", Through: 2, Turns: 1}}); err != nil {
				t.Errorf("a job started after the erasure: %v", err)
			}
		})
	}
	// Incarnations differ across a delete even at the same clock.
	k := history.Key{Tenant: "t", Conversation: "incarnations"}
	a := MustCommit(t, s, k, history.Change{Append: secret(2), Now: 1})
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	b := MustCommit(t, s, k, history.Change{Append: secret(2), Now: 1})
	if a.Incarnation == 0 || a.Incarnation == b.Incarnation {
		t.Errorf("incarnations %d then %d after a delete, want two different non-zero values", a.Incarnation, b.Incarnation)
	}
	if b.Epoch != 0 {
		t.Errorf("a new conversation's epoch is %d, want 0", b.Epoch)
	}
}

// forgetFirst forgets k's first turn, hard or soft.
func forgetFirst(t *testing.T, s history.Store, k history.Key, hard bool) {
	t.Helper()
	active := All(t, s, k, false)
	MustCommit(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{active[0].Seq, active[1].Seq}, hard)})
}
