package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

func testRoundTrip(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "acme", Conversation: "c1"}
	first := []history.Message{User("hi", 7), Call("A", 11), Result("A", 13), Asst("done", 17)}
	m := MustCommit(t, s, k, history.Change{Append: first, Model: "gpt-4o", ResponseID: "r1", PromptTokens: 100, CompletionTokens: 20, Now: 5e9, Incarnation: 99})
	m = MustCommit(t, s, k, history.Change{Append: []history.Message{User("again", 1), Call("B", 2)}, Now: 6e9})
	want := history.Meta{
		NextSeq: 7, FirstHash: first[0].Hash, LastTurn: 2, Turns: 2, Messages: 6, Tokens: 51,
		Status: history.StatusAwaiting, Model: "gpt-4o", ResponseID: "r1", PromptTokens: 100, CompletionTokens: 20,
		CreatedAt: 5e9, UpdatedAt: 6e9, Version: 2, Episode: 1, EpisodeFrom: 1, Incarnation: 99,
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("got meta %+v, want %+v", m, want)
	}
	snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snap.Meta) != fmt.Sprint(want) || !snap.Complete {
		t.Errorf("got loaded meta %+v complete %v, want %+v complete", snap.Meta, snap.Complete, want)
	}
	wantMsgs := append(slices.Clone(first), User("again", 1), Call("B", 2))
	wantTurns := []uint32{1, 1, 1, 1, 2, 2}
	if len(snap.Tail) != len(wantMsgs) {
		t.Fatalf("got %d messages, want %d", len(snap.Tail), len(wantMsgs))
	}
	for i, got := range snap.Tail {
		w := wantMsgs[i]
		created := time.Unix(0, 5e9)
		if i >= 4 {
			created = time.Unix(0, 6e9)
		}
		if !bytes.Equal(got.Raw, w.Raw) || got.Role != w.Role || got.Tokens != w.Tokens || got.Hash != w.Hash ||
			got.Seq != uint64(i+1) || got.Turn != wantTurns[i] || got.Flags != 0 || !got.CreatedAt.Equal(created) {
			t.Errorf("message %d: got %+v, want %s seq %d turn %d tokens %d created %v", i, got, w.Raw, i+1, wantTurns[i], w.Tokens, created)
		}
	}
}

func testLoadBounds(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	// Turns 1-10 of two messages (seqs 1-20), then turn 11 with a tool call
	// (seqs 21-24), 10 tokens each.
	MustCommit(t, s, k, history.Change{Append: Turns(1, 10)})
	MustCommit(t, s, k, history.Change{Append: []history.Message{User("q11", 10), Call("A", 10), Result("A", 10), Asst("a11", 10)}})
	tests := []struct {
		name     string
		q        history.Query
		cut      uint64
		want     []uint64
		complete bool
	}{
		{"no bounds: the last turn", history.Query{}, 0, span(21, 24), false},
		{"min messages rounds up to a turn", history.Query{MinMessages: 5}, 0, span(19, 24), false},
		{"tokens round up to a turn", history.Query{Tokens: 50}, 0, span(19, 24), false},
		{"tokens met exactly on a turn", history.Query{Tokens: 60}, 0, span(19, 24), false},
		{"tokens one over", history.Query{Tokens: 61}, 0, span(17, 24), false},
		{"max turns", history.Query{Tokens: 1000, MaxTurns: 3}, 0, span(17, 24), false},
		{"max turns after min messages", history.Query{Tokens: 1000, MaxTurns: 1, MinMessages: 7}, 0, span(17, 24), false},
		{"from cut", history.Query{Tokens: 1000, FromCut: true}, 13, span(13, 24), false},
		{"tokens stop before the cut", history.Query{Tokens: 50, FromCut: true}, 13, span(19, 24), false},
		{"min messages read past the cut", history.Query{Tokens: 1000, FromCut: true, MinMessages: 13}, 13, span(11, 24), false},
		{"cut ignored without FromCut", history.Query{Tokens: 1000}, 13, span(1, 24), true},
		{"everything", history.Query{Tokens: 1 << 30}, 0, span(1, 24), true},
		{"more messages than stored", history.Query{MinMessages: 100}, 0, span(1, 24), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			MustCommit(t, s, k, history.Change{Cut: tt.cut}) // only FromCut cases read the cut
			snap, err := s.Load(ctx, k, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(snap.Tail); !slices.Equal(got, tt.want) || snap.Complete != tt.complete {
				t.Errorf("got %v complete %v, want %v complete %v", got, snap.Complete, tt.want, tt.complete)
			}
			if snap.Tail[0].Role != wire.RoleUser {
				t.Errorf("got tail starting with %s, want a turn boundary", snap.Tail[0].Role)
			}
		})
	}
}

// Query.After is a hard lower bound: nothing at or before it is read,
// whatever MinMessages asks.
func testLoadAfter(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "after"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 10)}) // seqs 1-20
	for _, after := range []uint64{0, 6, 19, 20} {
		snap, err := s.Load(ctx, k, history.Query{MinMessages: 100, Tokens: 1 << 20, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if want := 20 - int(after); len(snap.Tail) != want || (want > 0 && snap.Tail[0].Seq != after+1) {
			t.Errorf("After %d: got %d messages from %v, want %d from %d", after, len(snap.Tail), seqs(snap.Tail), want, after+1)
		}
	}
}

func testSupersede(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 10), Cut: 15})
	// An edit of turn 7's question: keep seqs 1-12 (turns 1-6).
	edit := []history.Message{User("q7 edited", 5), Asst("a7'", 6)}
	m := MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 12, Turn: 6}, Append: edit})
	if m.Messages != 14 || m.Turns != 7 || m.Tokens != 120+11 || m.LastTurn != 7 || m.NextSeq != 23 || m.Cut != 0 ||
		m.FirstHash != User("q1", 10).Hash || !slices.Equal(m.Gaps, []history.Range{{From: 13, To: 20, Flags: history.Superseded}}) {
		t.Errorf("got meta %+v, want 14 messages, 7 turns, 131 tokens, last turn 7, next 23, no cut, gap 13-20", m)
	}

	got := All(t, s, k, true)
	if len(got) != 22 {
		t.Fatalf("got %d messages in all, want 22", len(got))
	}
	for _, msg := range got {
		wantFlag := msg.Seq >= 13 && msg.Seq <= 20
		if (msg.Flags&history.Superseded != 0) != wantFlag || msg.Active() == wantFlag {
			t.Errorf("message %d: got flags %b, want superseded %v", msg.Seq, msg.Flags, wantFlag)
		}
	}
	if got := All(t, s, k, false); len(got) != 14 || got[12].Seq != 21 || got[12].Turn != 7 {
		t.Errorf("got %d active messages, want 14 ending with seq 21, 22 in turn 7", len(got))
	}

	tests := []struct {
		name     string
		q        history.Query
		want     []uint64
		complete bool
	}{
		{"whole history skips the gap", history.Query{Tokens: 1000}, append(span(1, 12), 21, 22), true},
		{"tail across the gap", history.Query{Tokens: 30}, []uint64{11, 12, 21, 22}, false},
		{"tail after the gap", history.Query{Tokens: 11}, []uint64{21, 22}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := s.Load(ctx, k, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(snap.Tail); !slices.Equal(got, tt.want) || snap.Complete != tt.complete {
				t.Errorf("got %v complete %v, want %v complete %v", got, snap.Complete, tt.want, tt.complete)
			}
		})
	}

	t.Run("everything", func(t *testing.T) {
		fresh := User("start over", 3)
		m := MustCommit(t, s, k, history.Change{Supersede: &history.Boundary{}, Append: []history.Message{fresh}})
		if m.Messages != 1 || m.Turns != 1 || m.Tokens != 3 || m.FirstHash != fresh.Hash || m.LastTurn != 1 {
			t.Errorf("got meta %+v, want 1 message, 1 turn, 3 tokens, first hash of the new message", m)
		}
		snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(snap.Tail); !slices.Equal(got, []uint64{23}) || !snap.Complete {
			t.Errorf("got %v complete %v, want [23] complete", got, snap.Complete)
		}
	})
}

func testConflictChangesNothing(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	before := MustCommit(t, s, k, history.Change{Append: Turns(1, 3)})
	_, err := s.Commit(ctx, k, history.Change{Version: before.Version - 1, Supersede: &history.Boundary{}, Append: Turns(9, 1)})
	if !errors.Is(err, history.ErrConflict) {
		t.Fatalf("got error %v, want ErrConflict", err)
	}
	snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snap.Meta) != fmt.Sprint(before) || !slices.Equal(seqs(snap.Tail), span(1, 6)) {
		t.Errorf("got %+v %v, want %+v and seqs 1-6 unchanged", snap.Meta, seqs(snap.Tail), before)
	}
	if got := All(t, s, k, true); len(got) != 6 || got[0].Flags != 0 {
		t.Errorf("got %d messages, want the 6 unflagged", len(got))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Commit(cancelled, k, history.Change{Version: before.Version, Append: Turns(9, 1)}); err == nil {
		t.Error("got no error committing with a cancelled context, want one")
	}
}

func testMessagesAfterAndStop(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "c"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 5)})
	var got []uint64
	err := s.Messages(ctx, k, 4, false, func(m history.Message) bool {
		got = append(got, m.Seq)
		return len(got) < 3
	})
	if err != nil || !slices.Equal(got, []uint64{5, 6, 7}) {
		t.Errorf("got %v %v, want [5 6 7]", got, err)
	}
}

func testDeleteAndIsolation(t *testing.T, s history.Store) {
	keys := []history.Key{
		{Tenant: "t1", Conversation: "c"},
		{Tenant: "t2", Conversation: "c"},
		{Tenant: "t1", Conversation: "a"},
		{Tenant: "t1", Conversation: "a.b"},
		{Tenant: "t1", Conversation: "ab"},
		{Tenant: "t", Conversation: "1"},
	}
	for i, k := range keys {
		MustCommit(t, s, k, history.Change{Append: Turns(1, i+1)})
	}
	check := func(deleted int) {
		t.Helper()
		for i, k := range keys {
			snap, err := s.Load(ctx, k, history.Query{Tokens: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			want := 2 * (i + 1)
			if i == deleted {
				want = 0
				if snap.Meta.Version != 0 || !snap.Complete {
					t.Errorf("%s: got meta %+v complete %v after delete, want zero and complete", k, snap.Meta, snap.Complete)
				}
			}
			if len(snap.Tail) != want || len(All(t, s, k, true)) != want {
				t.Errorf("%s: got %d messages, want %d", k, len(snap.Tail), want)
			}
			for _, m := range snap.Tail {
				if !bytes.Contains(m.Raw, []byte(`"q`)) && !bytes.Contains(m.Raw, []byte(`"a`)) {
					t.Errorf("%s: got foreign message %s", k, m.Raw)
				}
			}
		}
	}
	check(-1)
	if err := s.Delete(ctx, keys[2]); err != nil { // "a", a prefix of "a.b" and "ab"
		t.Fatal(err)
	}
	check(2)
	m := MustCommit(t, s, keys[2], history.Change{Append: Turns(1, 3)})
	if m.Version != 1 || m.NextSeq != 7 {
		t.Errorf("got %+v after recreating, want a fresh conversation", m)
	}
}

// A summary lands with its own compare-and-set on covered-through: it
// neither checks nor bumps the version, so a chat commit computed before
// it still commits (and keeps it), and a summary made from a state
// another summary has left is refused with ErrStale.
// Query.Summarized stops a read at the stored summary's covered-through,
// found in the same read, and is nothing without a summary.
func testLoadSummarized(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "summarized"}
	MustCommit(t, s, k, history.Change{Append: Turns(1, 10)}) // seqs 1-20
	q := history.Query{MinMessages: 100, Tokens: 1 << 20, Summarized: true}
	if snap, err := s.Load(ctx, k, q); err != nil || len(snap.Tail) != 20 {
		t.Fatalf("no summary yet: got %d messages (%v), want all 20", len(snap.Tail), err)
	}
	if _, err := Land(s, k, history.SummaryChange{
		Summary: history.Summary{Text: "so far", Through: 12, Turns: 6}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after uint64
		first uint64
	}{{0, 13}, {6, 13}, {15, 16}} {
		q.After = tt.after
		snap, err := s.Load(ctx, k, q)
		if err != nil {
			t.Fatal(err)
		}
		if want := 20 - int(tt.first) + 1; len(snap.Tail) != want || snap.Tail[0].Seq != tt.first {
			t.Errorf("After %d with the summary through 12: got %v, want %d messages from %d", tt.after, seqs(snap.Tail), want, tt.first)
		}
	}
}

func testSummaryLanding(t *testing.T, s history.Store) {
	k := history.Key{Tenant: "t", Conversation: "sum"}
	before := MustCommit(t, s, k, history.Change{Append: Turns(1, 4)}) // seqs 1-8
	land := func(base, through uint64) (history.Meta, error) {
		return Land(s, k, history.SummaryChange{Base: base,
			Summary:      history.Summary{Text: "so far", Through: through, Turns: int(through / 2), Tokens: 5, At: 7},
			PromptTokens: 100, CompletionTokens: 20})
	}
	m, err := land(0, 4)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != before.Version || m.UpdatedAt != before.UpdatedAt || m.Summary == nil || m.Summary.Through != 4 ||
		m.Summaries != 1 || m.SummaryPromptTokens != 100 || m.SummaryCompletionTokens != 20 {
		t.Fatalf("got meta %+v, want the summary through 4 at version %d", m, before.Version)
	}
	for _, tt := range []struct {
		name          string
		base, through uint64
	}{
		{"made from no summary, after one landed", 0, 6},
		{"covering less than the stored one", 4, 4},
		{"covering messages not stored yet", 4, 9},
	} {
		if _, err := land(tt.base, tt.through); !errors.Is(err, history.ErrStale) {
			t.Errorf("%s: got %v, want ErrStale", tt.name, err)
		}
	}
	// A chat commit computed before the summary landed.
	m, err = s.Commit(ctx, k, history.Change{Version: before.Version, Append: Turns(5, 1), Now: 9})
	if err != nil {
		t.Fatalf("chat commit after a summary landed: %v", err)
	}
	if m.Summary == nil || m.Summary.Through != 4 || m.Messages != 10 {
		t.Errorf("got meta %+v, want the summary kept and 10 messages", m)
	}
	if m, err = land(4, 8); err != nil || m.Summary.Through != 8 || m.Summaries != 2 {
		t.Errorf("next summary: got %+v, %v", m.Summary, err)
	}
}
