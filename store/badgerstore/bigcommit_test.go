package badgerstore_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// A change too big for one Badger transaction (tens of thousands of
// messages, or megabytes below the value-log threshold) still commits
// whole, and a supersede of a long tail is one metadata write.
func TestCommitTooBigForOneTransaction(t *testing.T) {
	big := strings.Repeat("y", 900<<10) // below Badger's 1 MiB value threshold: counted in the transaction
	tests := []struct {
		name string
		msgs func() []history.Message
	}{
		{name: "40,000 tiny messages", msgs: func() []history.Message {
			out := make([]history.Message, 40000)
			for i := range out {
				out[i] = user("m"+strconv.Itoa(i), 1)
			}
			return out
		}},
		{name: "three 900 KiB messages", msgs: func() []history.Message {
			return []history.Message{user(big, 1), asst(big, 1), user(big, 1)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, t.TempDir())
			k := history.Key{Tenant: "t", Conversation: "big"}
			mustCommit(t, s, k, history.Change{Append: []history.Message{user("first", 1), asst("a", 1)}})
			msgs := tt.msgs()
			m := mustCommit(t, s, k, history.Change{Append: msgs})
			if want := len(msgs) + 2; m.Messages != want {
				t.Fatalf("got %d messages in the metadata, want %d", m.Messages, want)
			}
			if got := all(t, s, k, false); len(got) != len(msgs)+2 || string(got[len(got)-1].Raw) != string(msgs[len(msgs)-1].Raw) {
				t.Fatalf("got %d stored messages, want %d ending with the last one", len(got), len(msgs)+2)
			}
			// Sync to the first turn: every message after it superseded at once.
			m = mustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 2, Turn: 1}, Append: []history.Message{user("again", 1)}})
			if m.Messages != 3 {
				t.Errorf("after the supersede: got %d active messages, want 3", m.Messages)
			}
			if got := all(t, s, k, false); len(got) != 3 {
				t.Errorf("after the supersede: got %d active stored messages, want 3", len(got))
			}
			if got := all(t, s, k, true); len(got) != len(msgs)+3 || got[2].Flags&history.Superseded == 0 {
				t.Errorf("after the supersede: got %d messages in all (want %d), the first superseded flagged %v", len(got), len(msgs)+3, got[2].Flags)
			}
		})
	}
}

// A staged change whose metadata does not land (here: a conflict) leaves
// its records invisible to every read.
func TestStagedRecordsInvisibleUntilTheMetadataLands(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "staged"}
	mustCommit(t, s, k, history.Change{Append: []history.Message{user("q", 1), asst("a", 1)}})
	msgs := make([]history.Message, 40000)
	for i := range msgs {
		msgs[i] = user("m"+strconv.Itoa(i), 1)
	}
	if _, err := s.Commit(ctx, k, history.Change{Version: 99, Append: msgs}); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("got %v, want ErrConflict", err)
	}
	if got := all(t, s, k, true); len(got) != 2 {
		t.Errorf("Messages: got %d, want the 2 committed", len(got))
	}
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 10, Tokens: 1 << 20})
	if err != nil || len(snap.Tail) != 2 || snap.Meta.Messages != 2 {
		t.Errorf("Load: got %d messages (meta %d), %v; want 2", len(snap.Tail), snap.Meta.Messages, err)
	}
	// The next commit takes the same sequence numbers and is read whole.
	mustCommit(t, s, k, history.Change{Append: []history.Message{user("next", 1)}})
	if got := all(t, s, k, true); len(got) != 3 || !strings.Contains(string(got[2].Raw), "next") {
		t.Errorf("after the next commit: got %d messages, want 3 ending with next", len(got))
	}
}

// A hard forget of more records than one transaction can delete lands
// whole: the metadata erases the range at once (nothing of it is read or
// found meanwhile), and the records and their postings are gone after.
func TestHardForgetTooBigForOneTransaction(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(map[bool]string{false: "durable", true: "relaxed"}[noSync], func(t *testing.T) {
			s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: noSync, IndexBacklog: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			k := history.Key{Tenant: "t", Conversation: "big"}
			msgs := make([]history.Message, 15000)
			for i := range msgs {
				msgs[i] = user("needle m"+strconv.Itoa(i), 1)
			}
			mustCommit(t, s, k, history.Change{Append: msgs})
			mustCommit(t, s, k, history.Change{Append: []history.Message{asst("needle kept", 1)}})
			hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "m14999", Limit: 5})
			if err != nil || len(hits) != 1 || hits[0].Message.Seq != 15000 {
				t.Fatalf("before: search got %d hits, %v; want seq 15000", len(hits), err)
			}
			active := all(t, s, k, false)
			seqs := make([]uint64, len(msgs))
			for i := range seqs {
				seqs[i] = uint64(i + 1)
			}
			m := mustCommit(t, s, k, history.Change{Forget: history.PlanForget(active, seqs, true)})
			if m.Messages != 1 || m.FlagsAt(1) != history.Erased {
				t.Fatalf("got meta %+v, want 1 message left, 1-15000 erased", m)
			}
			if got := all(t, s, k, true); len(got) != 1 || got[0].Seq != 15001 {
				t.Errorf("Messages(all) got %d messages, want only seq 15001", len(got))
			}
			hits, err = s.Search(ctx, "t", history.SearchQuery{Text: "needle", Limit: 20000})
			if err != nil || len(hits) != 1 || hits[0].Message.Seq != 15001 {
				t.Errorf("after: search got %d hits, %v; want seq 15001 only", len(hits), err)
			}
			// The metadata, the listing entry, seq 15001, the totals, the
			// index version, the segment counter and the side mark; in
			// the side database seq 15001's two postings, the span of its
			// segment, that segment's table and the side's segment
			// counter (the erased records' segment and its table are
			// gone).
			if left, side := badgerstore.CountKeys(t, s.DB(), nil), badgerstore.CountKeys(t, s.SideDB(), nil); left != 7 || side != 5 {
				t.Errorf("got %d keys in the database and %d in the side one; want 7 and 5", left, side)
			}
		})
	}
}
