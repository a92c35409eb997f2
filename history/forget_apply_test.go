package history_test

import (
	"context"
	"slices"
	"testing"

	"github.com/recallproxy/recall/history"
)

// A forget lands as ranges in the metadata, with counters that match a
// recount of what is left, soft or hard, and drops a summary covering
// any forgotten message.
func TestForgetChangeKeepsCountersTrue(t *testing.T) {
	for _, hard := range []bool{false, true} {
		for _, instruction := range []string{"oldest", "before:turn_3", "speaker:user", "speaker:tool", "position:4", "position:9"} {
			s := &memStore{}
			ctx := context.Background()
			msgs := []history.Message{history.User("q1"), history.Asst("a1"),
				history.User("q2"), history.Calls("", "c1"), history.Tool("c1", "r1"), history.Asst("a2"),
				history.User("q3"), history.Asst("a3"), history.User("q4")}
			meta, err := s.Commit(ctx, history.Key{}, history.Change{Append: msgs, Now: 1})
			if err != nil {
				t.Fatal(err)
			}
			if meta, err = s.Commit(ctx, history.Key{}, history.Change{Version: meta.Version,
				Summary: &history.SummaryChange{Incarnation: meta.Incarnation, Summary: history.Summary{Text: "s", Through: 2}}}); err != nil {
				t.Fatal(err)
			}
			active := activeOf(t, s)
			seqs, err := history.Forget(active, instruction)
			if err != nil {
				t.Fatal(err)
			}
			f := history.PlanForget(active, seqs, hard)
			if f == nil {
				t.Fatalf("%s selected nothing", instruction)
			}
			meta, err = s.Commit(ctx, history.Key{}, history.Change{Version: meta.Version, Forget: f, Now: 2})
			if err != nil {
				t.Fatal(err)
			}
			left := activeOf(t, s)
			turns := map[uint32]bool{}
			tokens := 0
			for _, m := range left {
				turns[m.Turn] = true
				tokens += m.Tokens
				if slices.Contains(seqs, m.Seq) {
					t.Errorf("%s: message %d still active", instruction, m.Seq)
				}
			}
			if meta.Messages != len(left) || meta.Tokens != tokens || meta.Turns != len(turns) {
				t.Errorf("%s hard=%v: meta counts %d messages %d tokens %d turns, recount %d %d %d",
					instruction, hard, meta.Messages, meta.Tokens, meta.Turns, len(left), tokens, len(turns))
			}
			if len(left) > 0 && (meta.FirstHash != left[0].Hash || meta.LastTurn != left[len(left)-1].Turn) {
				t.Errorf("%s: first hash or last turn not those of the messages left", instruction)
			}
			if covered := seqs[0] <= 2; covered != (meta.Summary == nil) {
				t.Errorf("%s: forgot %v, summary through 2 kept = %v", instruction, seqs, meta.Summary != nil)
			}
			var all []history.Message
			s.Messages(ctx, history.Key{}, 0, true, func(m history.Message) bool { all = append(all, m); return true })
			if want := len(msgs); hard {
				want -= len(seqs)
				if len(all) != want {
					t.Errorf("%s hard: include=all lists %d messages, want %d (erased ones are gone)", instruction, len(all), want)
				}
			} else if len(all) != want {
				t.Errorf("%s soft: include=all lists %d messages, want %d", instruction, len(all), want)
			}
		}
	}
}

// An import keeps what the export said of each message: sequence
// numbers, turns, episodes, times and flags, and the counters follow.
func TestImportKeepsExportedMessages(t *testing.T) {
	ctx := context.Background()
	src := &memStore{}
	meta, _ := src.Commit(ctx, history.Key{}, history.Change{Append: []history.Message{history.User("q1"), history.Asst("a1")}, Now: 1})
	meta, _ = src.Commit(ctx, history.Key{}, history.Change{Version: meta.Version, Seal: true, Now: 5,
		Supersede: &history.Boundary{Seq: 1, Turn: 1}, Append: []history.Message{history.Asst("a1 again"), history.User("q2")}})
	var exported []history.Message
	src.Messages(ctx, history.Key{}, 0, true, func(m history.Message) bool { exported = append(exported, m); return true })

	dst := &memStore{}
	got, err := dst.Commit(ctx, history.Key{}, history.Change{Import: true, Append: exported, Now: 9})
	if err != nil {
		t.Fatal(err)
	}
	var imported []history.Message
	dst.Messages(ctx, history.Key{}, 0, true, func(m history.Message) bool { imported = append(imported, m); return true })
	if len(imported) != len(exported) {
		t.Fatalf("imported %d messages, exported %d", len(imported), len(exported))
	}
	for i := range exported {
		a, b := exported[i], imported[i]
		if a.Seq != b.Seq || a.Turn != b.Turn || a.Episode != b.Episode || a.Flags != b.Flags || !a.CreatedAt.Equal(b.CreatedAt) || string(a.Raw) != string(b.Raw) {
			t.Errorf("message %d: exported %+v, imported %+v", i, a, b)
		}
	}
	if got.Messages != meta.Messages || got.Tokens != meta.Tokens || got.Turns != meta.Turns || got.NextSeq != meta.NextSeq ||
		got.LastTurn != meta.LastTurn || got.FirstHash != meta.FirstHash || got.Episode != meta.Episode {
		t.Errorf("imported meta %+v\nsource meta %+v", got, meta)
	}
	if _, err := dst.Commit(ctx, history.Key{}, history.Change{Import: true, Append: exported, Now: 10}); err != history.ErrConflict {
		t.Errorf("import into a conversation that is not empty: %v, want ErrConflict", err)
	}
}

func activeOf(t *testing.T, s *memStore) []history.Message {
	t.Helper()
	var out []history.Message
	if err := s.Messages(context.Background(), history.Key{}, 0, false, func(m history.Message) bool { out = append(out, m); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}
