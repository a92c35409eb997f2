package pgstore_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestReplicaCacheWalksTheEntry: with a second replica on the database, a
// walk of a cached conversation's messages (a summary job's read of its
// turns) costs one round trip reading the head, and no read of the
// messages, when the entry holds them: unchanged, or after the other
// replica appended a turn (read with the head); the same messages the
// store gives. After the other replica erased a turn (a hard forget), the
// entry is dropped and the messages read (two round trips): the walk and
// the next load never give the erased text back.
func TestReplicaCacheWalksTheEntry(t *testing.T) {
	ctx := testCtx(t)
	rt := &roundTrips{}
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{Tracer: rt})
	other := open(t, url, pgstore.Options{})
	c := history.NewCache(s, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "walk"}
	commit(t, c, k, history.Change{Append: turns(0, 3)}) // cached whole by its creation
	texts := func(r history.Store, after uint64) []string {
		t.Helper()
		var out []string
		if err := r.Messages(ctx, k, after, false, func(m history.Message) bool { out = append(out, string(m.Raw)); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const readMessages = "SELECT seq, body FROM recall_messages"
	walk := func(what string, after uint64, fromEntry bool) []string {
		t.Helper()
		rt.take()
		got := texts(c, after)
		reads := rt.batchedLike(readMessages)
		wantTrips := 1
		if !fromEntry {
			wantTrips = 2 // the head, then the messages
		}
		if n := rt.take(); n != wantTrips {
			t.Errorf("%s: %d round trips, want %d", what, n, wantTrips)
		}
		if fromEntry && reads != 0 {
			t.Errorf("%s: %d reads of the messages, want none (the entry holds them)", what, reads)
		}
		if want := texts(other, after); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want the store's %q", what, got, want)
		}
		return got
	}
	walk("unchanged", 0, true)
	walk("unchanged, after a turn", 2, true)

	m := commit(t, other, k, history.Change{Append: turns(3, 1)})
	if got := walk("a turn appended by the other replica", 2, true); len(got) != 6 || !strings.Contains(got[4], "question 3") {
		t.Errorf("a turn appended by the other replica: got %q, want turns 1 to 3", got)
	}

	var active []history.Message
	if err := other.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, m); return true }); err != nil {
		t.Fatal(err)
	}
	f := history.PlanForget(active, []uint64{3, 4}, true) // turn 1
	commit(t, other, k, history.Change{Version: m.Version, Forget: f, Now: 9e9})
	for _, text := range walk("turn 1 erased by the other replica", 0, false) {
		if strings.Contains(text, "question 1") || strings.Contains(text, "answer 1") {
			t.Errorf("turn 1 erased by the other replica: the walk gives %q", text)
		}
	}
	snap, err := c.Load(ctx, k, history.Query{MinMessages: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqsOf(snap.Tail); !slices.Equal(got, []uint64{1, 2, 5, 6, 7, 8}) {
		t.Errorf("turn 1 erased by the other replica: the load gives messages %v, want [1 2 5 6 7 8]", got)
	}
}
