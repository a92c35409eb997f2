package storetest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/recallproxy/recall/history"
)

// A seal closes the open episode: the next messages carry the next
// episode, a seal alone ends the conversation, and a summary titling a
// sealed episode titles the conversation.
func testEpisodes(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "ep"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 2)}) // seqs 1-4
	m := MustCommit(t, s, k, history.Change{Seal: true})
	if m.Status != history.StatusEnded || m.Episode != 2 || m.EpisodeFrom != 5 ||
		!slices.Equal(m.Episodes, []history.Episode{{N: 1, From: 1, To: 4, SealedAt: m.UpdatedAt}}) {
		t.Fatalf("after a seal: got status %s, episode %d from %d, sealed %+v", m.Status, m.Episode, m.EpisodeFrom, m.Episodes)
	}
	m = MustCommit(t, s, k, history.Change{Append: Turns(3, 1)})
	if m.Status != history.StatusActive || m.Episode != 2 {
		t.Errorf("after the next turn: got status %s episode %d, want active, 2", m.Status, m.Episode)
	}
	m = MustCommit(t, s, k, history.Change{Seal: true, Append: Turns(4, 1)}) // idle timeout, then a turn
	if m.Episode != 3 || m.EpisodeFrom != 7 || len(m.Episodes) != 2 || m.Episodes[1] != (history.Episode{N: 2, From: 5, To: 6, SealedAt: m.UpdatedAt}) {
		t.Errorf("seal with a turn: got episode %d from %d, sealed %+v", m.Episode, m.EpisodeFrom, m.Episodes)
	}
	var episodes []uint32
	for _, msg := range All(t, s, k, false) {
		episodes = append(episodes, msg.Episode)
	}
	if want := []uint32{1, 1, 1, 1, 2, 2, 3, 3}; !slices.Equal(episodes, want) {
		t.Errorf("got message episodes %v, want %v", episodes, want)
	}
	m, err := Land(s, k, history.SummaryChange{
		Summary: history.Summary{Text: "s", Through: 4}, Episode: 1, Title: "Planning a trip"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Meta.Title != "Planning a trip" || snap.Meta.Episodes[0].Title != "Planning a trip" || snap.Meta.Version != m.Version {
		t.Errorf("got title %q, episodes %+v; want the first titled", snap.Meta.Title, snap.Meta.Episodes)
	}
}

// A commit whose first message carries history.Opening remembers where
// the client's context began: the metadata read back holds it, the
// message's record keeps no flag, and a supersede from before it forgets
// it.
func testSession(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "session"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 2)}) // seqs 1-4
	open := Turns(3, 1)
	open[0].Flags |= history.Opening
	MustCommit(t, s, k, history.Change{Append: open}) // seqs 5-6
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := history.Session{From: 5, Before: history.Boundary{Seq: 4, Turn: 2}, Messages: 4, Tokens: 40}
	if snap.Meta.Session != want {
		t.Errorf("got session %+v, want %+v", snap.Meta.Session, want)
	}
	if all := All(t, s, k, true); len(all) != 6 || all[4].Flags != 0 {
		t.Errorf("got %d messages, the opening one with flags %v; want 6 and none", len(all), all[4].Flags)
	}
	MustCommit(t, s, k, history.Change{Append: Turns(4, 1)})
	if snap, err = s.Load(ctx, k, history.Query{}); err != nil || snap.Meta.Session != want {
		t.Errorf("after a commit that opens nothing: got session %+v, %v; want %+v", snap.Meta.Session, err, want)
	}
	MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 2, Turn: 1}, Append: Turns(5, 1)})
	if snap, err = s.Load(ctx, k, history.Query{}); err != nil || snap.Meta.Session.Known() {
		t.Errorf("after a supersede from before it: got session %+v, %v; want none", snap.Meta.Session, err)
	}
}

// A forget through Commit: soft keeps the records (listed with all, never
// active), hard erases them (not even listed); both fix the counters and
// take the messages out of search.
func testForget(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "forget"}
	msgs := []history.Message{User("alpha question", 10), Asst("alpha answer", 10),
		User("beta question", 10), Asst("beta answer", 10),
		User("gamma question", 10), Asst("gamma answer", 10)}
	MustCommit(t, s, k, history.Change{Append: msgs})
	if _, err := Land(s, k, history.SummaryChange{Summary: history.Summary{Text: "s", Through: 2}}); err != nil {
		t.Fatal(err)
	}
	forget := func(seqs []uint64, hard bool) history.Meta {
		t.Helper()
		active := All(t, s, k, false)
		return MustCommit(t, s, k, history.Change{Forget: history.PlanForget(active, seqs, hard)})
	}
	found := func(q string) []uint64 {
		t.Helper()
		hits, err := s.Search(ctx, k.Tenant, history.SearchQuery{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for _, h := range hits {
			out = append(out, h.Message.Seq)
		}
		slices.Sort(out)
		return out
	}
	if got := found("question"); !slices.Equal(got, []uint64{1, 3, 5}) {
		t.Fatalf("before forgetting: search found %v, want [1 3 5]", got)
	}

	m := forget([]uint64{1, 2}, false)
	if m.Messages != 4 || m.Turns != 2 || m.Tokens != 40 || m.FirstHash != msgs[2].Hash || m.LastTurn != 3 ||
		m.Summary != nil || m.FlagsAt(1) != history.Forgotten {
		t.Errorf("soft forget: got meta %+v, want 4 messages, 2 turns, 40 tokens, the first hash of seq 3, no summary", m)
	}
	all := All(t, s, k, true)
	if !slices.Equal(seqs(all), span(1, 6)) || all[0].Flags != history.Forgotten || all[1].Flags != history.Forgotten || !all[2].Active() {
		t.Errorf("soft forget: Messages(all) got %v with flags %v %v, want 1-6 with 1, 2 forgotten", seqs(all), all[0].Flags, all[1].Flags)
	}
	if got := seqs(All(t, s, k, false)); !slices.Equal(got, span(3, 6)) {
		t.Errorf("soft forget: active got %v, want 3-6", got)
	}
	if got := found("alpha"); got != nil {
		t.Errorf("soft forget: search found %v, want nothing", got)
	}

	m = forget([]uint64{5}, true)
	if m.Messages != 3 || m.Turns != 2 || m.Tokens != 30 || m.FlagsAt(5) != history.Erased {
		t.Errorf("hard forget: got meta %+v, want 3 messages, 2 turns, 30 tokens, seq 5 erased", m)
	}
	if got := seqs(All(t, s, k, true)); !slices.Equal(got, []uint64{1, 2, 3, 4, 6}) {
		t.Errorf("hard forget: Messages(all) got %v, want [1 2 3 4 6]: the erased record gone", got)
	}
	if got := found("question"); !slices.Equal(got, []uint64{3}) {
		t.Errorf("hard forget: search found %v, want [3]", got)
	}
	snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(snap.Tail); !slices.Equal(got, []uint64{3, 4, 6}) || !snap.Complete {
		t.Errorf("hard forget: Load got %v complete %v, want [3 4 6] complete", got, snap.Complete)
	}
}

// An import appends exported messages as they were: sequence numbers,
// turns, episodes, flags and times kept, counters recomputed; only into
// an empty conversation.
func testImport(t *testing.T, s history.Store) {
	src := history.Key{Tenant: "t", Conversation: "src"}
	MustCommit(t, s, src, history.Change{Append: Turns(1, 2), Now: 1e9})
	MustCommit(t, s, src, history.Change{Seal: true, Append: Turns(3, 2), Now: 2e9})
	MustCommit(t, s, src, history.Change{Supersede: &history.Boundary{Seq: 6, Turn: 3}, Append: Turns(9, 1), Now: 3e9})
	active := All(t, s, src, false)
	want := MustCommit(t, s, src, history.Change{Forget: history.PlanForget(active, []uint64{1, 2}, false), Now: 4e9})
	exported := All(t, s, src, true)

	dst := history.Key{Tenant: "t", Conversation: "dst"}
	m, err := s.Commit(ctx, dst, history.Change{Import: true, Append: exported, Now: 5e9})
	if err != nil {
		t.Fatal(err)
	}
	if m.NextSeq != want.NextSeq || m.Messages != want.Messages || m.Turns != want.Turns || m.Tokens != want.Tokens ||
		m.FirstHash != want.FirstHash || m.LastTurn != want.LastTurn || m.Episode != want.Episode || m.Version != 1 {
		t.Errorf("got meta %+v, want the counters of %+v at version 1", m, want)
	}
	got := All(t, s, dst, true)
	if len(got) != len(exported) {
		t.Fatalf("got %d messages, want %d", len(got), len(exported))
	}
	for i, g := range got {
		e := exported[i]
		if g.Seq != e.Seq || g.Turn != e.Turn || g.Episode != e.Episode || g.Flags != e.Flags || !g.CreatedAt.Equal(e.CreatedAt) ||
			!bytes.Equal(g.Raw, e.Raw) || g.Role != e.Role || g.Tokens != e.Tokens || g.Hash != e.Hash {
			t.Errorf("message %d: got %+v, want %+v", i, g, e)
		}
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "q1 q9", Conversation: "dst", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Message.Seq != 9 {
		t.Errorf("search of the import: got %v, want seq 9 only (q1 was forgotten)", hits)
	}
	if _, err := s.Commit(ctx, dst, history.Change{Version: m.Version, Import: true, Append: exported, Now: 6e9}); !errors.Is(err, history.ErrConflict) {
		t.Errorf("import into a non-empty conversation: got %v, want ErrConflict", err)
	}
	if got := All(t, s, dst, true); len(got) != len(exported) {
		t.Errorf("after the refused import: got %d messages, want %d", len(got), len(exported))
	}
}

// Delete erases everything: metadata, messages, summary, list and search
// entries; the id then starts fresh; deleting what does not exist is fine.
func testDelete(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "gone"}
	other := history.Key{Tenant: "t", Conversation: "kept"}
	MustCommit(t, s, other, history.Change{Append: []history.Message{User("walrus kept", 1)}})
	MustCommit(t, s, k, history.Change{Append: []history.Message{User("walrus one", 1), Asst("walrus two", 1)}})
	MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 1, Turn: 1}, Append: []history.Message{Asst("walrus three", 1)}})
	if _, err := Land(s, k, history.SummaryChange{Summary: history.Summary{Text: "s", Through: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 100})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Meta.Version != 0 || snap.Meta.Summary != nil || len(snap.Tail) != 0 || !snap.Complete {
		t.Errorf("after delete: got %+v, want a zero snapshot", snap)
	}
	if got := All(t, s, k, true); len(got) != 0 {
		t.Errorf("after delete: got %d messages, want none", len(got))
	}
	page, _, err := s.List(ctx, "t", history.ListQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 1 || page[0].Conversation != "kept" {
		t.Errorf("after delete: list got %v, want only kept", ids(page))
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "walrus", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Conversation != "kept" {
		t.Errorf("after delete: search got %v, want only kept's message", hits)
	}

	m := MustCommit(t, s, k, history.Change{Append: []history.Message{User("fresh start", 1)}})
	if m.Version != 1 || m.NextSeq != 2 || m.Messages != 1 || len(m.Gaps) != 0 || m.Summary != nil {
		t.Errorf("recreated: got %+v, want a fresh conversation at seq 1", m)
	}
	if got := All(t, s, k, true); len(got) != 1 || !bytes.Contains(got[0].Raw, []byte("fresh start")) {
		t.Errorf("recreated: got %d messages, want only the new one", len(got))
	}
	if hits, err = s.Search(ctx, "t", history.SearchQuery{Text: "walrus", Conversation: "gone", Limit: 10}); err != nil || len(hits) != 0 {
		t.Errorf("recreated: search of the old text got %v, %v; want nothing", hits, err)
	}
	for _, unknown := range []history.Key{{Tenant: "t", Conversation: "never"}, {Tenant: "nobody", Conversation: "x"}} {
		if err := s.Delete(ctx, unknown); err != nil {
			t.Errorf("deleting unknown %s: got %v, want nil", unknown, err)
		}
	}
}
