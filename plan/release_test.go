package plan_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// releaseInput plans "and now?" on a stored conversation of four turns
// and a summary.
func releaseInput(st history.Store) plan.Input {
	return plan.Input{
		Store: st, Key: history.Key{Tenant: "t", Conversation: "c"}, Model: "gpt-4o", Now: time.Now(),
		Policy: plan.Policy{Mode: history.Auto},
		New:    []history.Message{user("and now?")},
	}
}

// Release empties the plan's array (the pool keeps no message's bytes
// alive), leaves Messages nil and gives the array back: a later plan lays
// its messages out in it, and they are that plan's own.
func TestReleasedPlanArrayIsReused(t *testing.T) {
	st := summaryStore(t, 4, 1, "The user asked.")
	first, err := plan.Make(context.Background(), releaseInput(st))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]plan.Message, len(first.Messages))
	copy(want, first.Messages)
	reused := false
	// sync.Pool may drop what it is given (it does at random under the
	// race detector): a few tries.
	for range 100 {
		p, err := plan.Make(context.Background(), releaseInput(st))
		if err != nil {
			t.Fatal(err)
		}
		all := p.Messages[:cap(p.Messages)]
		p.Release()
		if p.Messages != nil {
			t.Fatalf("after Release: Messages holds %d messages", len(p.Messages))
		}
		for i := range all {
			if all[i].Raw != nil || all[i].Role != "" || all[i].Seq != 0 {
				t.Fatalf("after Release: message %d still holds %s (seq %d)", i, all[i].Raw, all[i].Seq)
			}
		}
		next, err := plan.Make(context.Background(), releaseInput(st))
		if err != nil {
			t.Fatal(err)
		}
		if len(next.Messages) != len(want) {
			t.Fatalf("got %d messages, want %d", len(next.Messages), len(want))
		}
		for i, m := range next.Messages {
			if m.Kind != want[i].Kind || m.Seq != want[i].Seq || string(m.Raw) != string(want[i].Raw) {
				t.Fatalf("message %d: got %v seq %d %s, want %v seq %d %s", i, m.Kind, m.Seq, m.Raw, want[i].Kind, want[i].Seq, want[i].Raw)
			}
		}
		if &next.Messages[0] == &all[0] {
			reused = true
			break
		}
		next.Release()
	}
	if !reused {
		t.Error("no plan reused a released array in 100 tries")
	}
}

// A second Release gives nothing back again: two later plans never share
// an array.
func TestPlanReleasedTwiceGivesBackOnce(t *testing.T) {
	st := summaryStore(t, 4, 1, "The user asked.")
	p, err := plan.Make(context.Background(), releaseInput(st))
	if err != nil {
		t.Fatal(err)
	}
	p.Release()
	p.Release()
	a, err := plan.Make(context.Background(), releaseInput(st))
	if err != nil {
		t.Fatal(err)
	}
	b, err := plan.Make(context.Background(), releaseInput(st))
	if err != nil {
		t.Fatal(err)
	}
	if &a.Messages[0] == &b.Messages[0] {
		t.Error("two plans share one array")
	}
}
