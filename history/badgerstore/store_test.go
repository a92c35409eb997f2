package badgerstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/badgerstore"
)

var ctx = context.Background()

func msg(role, raw string, tokens int) history.Message {
	return history.Message{Role: role, Raw: []byte(raw), Tokens: tokens, Hash: xxhash.Sum64String(raw)}
}

func user(s string, tokens int) history.Message {
	return msg(history.RoleUser, `{"role":"user","content":"`+s+`"}`, tokens)
}

func asst(s string, tokens int) history.Message {
	return msg(history.RoleAssistant, `{"role":"assistant","content":"`+s+`"}`, tokens)
}

func call(id string, tokens int) history.Message {
	return msg(history.RoleAssistant, `{"role":"assistant","content":null,"tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"f","arguments":"{}"}}]}`, tokens)
}

func result(id string, tokens int) history.Message {
	return msg(history.RoleTool, `{"role":"tool","tool_call_id":"`+id+`","content":"ok"}`, tokens)
}

func open(t testing.TB, dir string) *badgerstore.Store {
	t.Helper()
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mustCommit commits c on top of the conversation's current version.
func mustCommit(t testing.TB, s *badgerstore.Store, k history.Key, c history.Change) history.Meta {
	t.Helper()
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	c.Version = snap.Meta.Version
	if c.Now == 0 {
		c.Now = int64(snap.Meta.Version+1) * 1e9
	}
	m, err := s.Commit(ctx, k, c)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// turns returns n turns of a user (10 tokens) and an assistant (10 tokens)
// message: seqs 2i-1 and 2i for turn i.
func turns(from, n int) []history.Message {
	var out []history.Message
	for i := from; i < from+n; i++ {
		out = append(out, user("q"+strconv.Itoa(i), 10), asst("a"+strconv.Itoa(i), 10))
	}
	return out
}

func tailSeqs(snap history.Snapshot) []uint64 {
	out := make([]uint64, len(snap.Tail))
	for i, m := range snap.Tail {
		out[i] = m.Seq
	}
	return out
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func all(t *testing.T, s *badgerstore.Store, k history.Key, all bool) []history.Message {
	t.Helper()
	var out []history.Message
	if err := s.Messages(ctx, k, 0, all, func(m history.Message) bool { out = append(out, m); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "acme", Conversation: "c1"}
	first := []history.Message{user("hi", 7), call("A", 11), result("A", 13), asst("done", 17)}
	m := mustCommit(t, s, k, history.Change{Append: first, Model: "gpt-4o", ResponseID: "r1", PromptTokens: 100, CompletionTokens: 20, Now: 5e9})
	m = mustCommit(t, s, k, history.Change{Append: []history.Message{user("again", 1), call("B", 2)}, Now: 6e9})
	want := history.Meta{
		NextSeq: 7, FirstHash: first[0].Hash, LastTurn: 2, Turns: 2, Messages: 6, Tokens: 51,
		Status: history.StatusAwaiting, Model: "gpt-4o", ResponseID: "r1", PromptTokens: 100, CompletionTokens: 20,
		CreatedAt: 5e9, UpdatedAt: 6e9, Version: 2, Episode: 1, EpisodeFrom: 1,
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
	wantMsgs := append(slices.Clone(first), user("again", 1), call("B", 2))
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

func TestLoadBounds(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "c"}
	// Turns 1-10 of two messages (seqs 1-20), then turn 11 with a tool call
	// (seqs 21-24), 10 tokens each.
	mustCommit(t, s, k, history.Change{Append: turns(1, 10)})
	mustCommit(t, s, k, history.Change{Append: []history.Message{user("q11", 10), call("A", 10), result("A", 10), asst("a11", 10)}})
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
			mustCommit(t, s, k, history.Change{Cut: tt.cut}) // only FromCut cases read the cut
			snap, err := s.Load(ctx, k, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := tailSeqs(snap); !slices.Equal(got, tt.want) || snap.Complete != tt.complete {
				t.Errorf("got %v complete %v, want %v complete %v", got, snap.Complete, tt.want, tt.complete)
			}
			if snap.Tail[0].Role != history.RoleUser {
				t.Errorf("got tail starting with %s, want a turn boundary", snap.Tail[0].Role)
			}
		})
	}
}

func TestSupersede(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "c"}
	mustCommit(t, s, k, history.Change{Append: turns(1, 10), Cut: 15})
	// An edit of turn 7's question: keep seqs 1-12 (turns 1-6).
	edit := []history.Message{user("q7 edited", 5), asst("a7'", 6)}
	m := mustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 12, Turn: 6}, Append: edit})
	if m.Messages != 14 || m.Turns != 7 || m.Tokens != 120+11 || m.LastTurn != 7 || m.NextSeq != 23 || m.Cut != 0 ||
		m.FirstHash != user("q1", 10).Hash || !slices.Equal(m.Gaps, []history.Range{{From: 13, To: 20, Flags: history.Superseded}}) {
		t.Errorf("got meta %+v, want 14 messages, 7 turns, 131 tokens, last turn 7, next 23, no cut, gap 13-20", m)
	}

	got := all(t, s, k, true)
	if len(got) != 22 {
		t.Fatalf("got %d messages in all, want 22", len(got))
	}
	for _, msg := range got {
		wantFlag := msg.Seq >= 13 && msg.Seq <= 20
		if (msg.Flags&history.Superseded != 0) != wantFlag || msg.Active() == wantFlag {
			t.Errorf("message %d: got flags %b, want superseded %v", msg.Seq, msg.Flags, wantFlag)
		}
	}
	if got := all(t, s, k, false); len(got) != 14 || got[12].Seq != 21 || got[12].Turn != 7 {
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
			if got := tailSeqs(snap); !slices.Equal(got, tt.want) || snap.Complete != tt.complete {
				t.Errorf("got %v complete %v, want %v complete %v", got, snap.Complete, tt.want, tt.complete)
			}
		})
	}

	t.Run("everything", func(t *testing.T) {
		fresh := user("start over", 3)
		m := mustCommit(t, s, k, history.Change{Supersede: &history.Boundary{}, Append: []history.Message{fresh}})
		if m.Messages != 1 || m.Turns != 1 || m.Tokens != 3 || m.FirstHash != fresh.Hash || m.LastTurn != 1 {
			t.Errorf("got meta %+v, want 1 message, 1 turn, 3 tokens, first hash of the new message", m)
		}
		snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if got := tailSeqs(snap); !slices.Equal(got, []uint64{23}) || !snap.Complete {
			t.Errorf("got %v complete %v, want [23] complete", got, snap.Complete)
		}
	})
}

func TestConflictChangesNothing(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "c"}
	before := mustCommit(t, s, k, history.Change{Append: turns(1, 3)})
	_, err := s.Commit(ctx, k, history.Change{Version: before.Version - 1, Supersede: &history.Boundary{}, Append: turns(9, 1)})
	if !errors.Is(err, history.ErrConflict) {
		t.Fatalf("got error %v, want ErrConflict", err)
	}
	snap, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(snap.Meta) != fmt.Sprint(before) || !slices.Equal(tailSeqs(snap), span(1, 6)) {
		t.Errorf("got %+v %v, want %+v and seqs 1-6 unchanged", snap.Meta, tailSeqs(snap), before)
	}
	if got := all(t, s, k, true); len(got) != 6 || got[0].Flags != 0 {
		t.Errorf("got %d messages, want the 6 unflagged", len(got))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Commit(cancelled, k, history.Change{Version: before.Version, Append: turns(9, 1)}); err == nil {
		t.Error("got no error committing with a cancelled context, want one")
	}
}

func TestMessagesAfterAndStop(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "c"}
	mustCommit(t, s, k, history.Change{Append: turns(1, 5)})
	var got []uint64
	err := s.Messages(ctx, k, 4, false, func(m history.Message) bool {
		got = append(got, m.Seq)
		return len(got) < 3
	})
	if err != nil || !slices.Equal(got, []uint64{5, 6, 7}) {
		t.Errorf("got %v %v, want [5 6 7]", got, err)
	}
}

func TestDeleteAndIsolation(t *testing.T) {
	s := open(t, t.TempDir())
	keys := []history.Key{
		{Tenant: "t1", Conversation: "c"},
		{Tenant: "t2", Conversation: "c"},
		{Tenant: "t1", Conversation: "a"},
		{Tenant: "t1", Conversation: "a.b"},
		{Tenant: "t1", Conversation: "ab"},
		{Tenant: "t", Conversation: "1"},
	}
	for i, k := range keys {
		mustCommit(t, s, k, history.Change{Append: turns(1, i+1)})
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
			if len(snap.Tail) != want || len(all(t, s, k, true)) != want {
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
	m := mustCommit(t, s, keys[2], history.Change{Append: turns(1, 3)})
	if m.Version != 1 || m.NextSeq != 7 {
		t.Errorf("got %+v after recreating, want a fresh conversation", m)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	k := history.Key{Tenant: "t", Conversation: "c"}
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, k, history.Change{Append: turns(1, 4), Cut: 3})
	want := mustCommit(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 6, Turn: 3}, Append: turns(7, 1)})
	before, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	after, err := s.Load(ctx, k, history.Query{Tokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after.Meta) != fmt.Sprint(want) || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("got %+v after reopening, want %+v", after, before)
	}
	if got := len(all(t, s, k, true)); got != 10 {
		t.Errorf("got %d messages after reopening, want 10", got)
	}
}

func BenchmarkLoadTail(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			s, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := history.Key{Tenant: "t", Conversation: "c"}
			for i := 0; i < n; i += 100 {
				mustCommit(b, s, k, history.Change{Append: turns(i, min(100, n-i))})
			}
			q := history.Query{MinMessages: 1, Tokens: 100, FromCut: true} // 5 turns
			b.ReportAllocs()
			for b.Loop() {
				snap, err := s.Load(ctx, k, q)
				if err != nil || len(snap.Tail) != 10 {
					b.Fatalf("got %d messages, %v; want 10", len(snap.Tail), err)
				}
			}
		})
	}
}

func BenchmarkCommit(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", !noSync), func(b *testing.B) {
			s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := history.Key{Tenant: "t", Conversation: "c"}
			turn := turns(1, 1)
			var version uint64
			b.ReportAllocs()
			for b.Loop() {
				m, err := s.Commit(ctx, k, history.Change{Version: version, Append: turn, Now: 1})
				if err != nil {
					b.Fatal(err)
				}
				version = m.Version
			}
		})
	}
}

// BenchmarkCommitConcurrent commits turns to 32 conversations at once, as
// a loaded proxy does: with durable writes, concurrent commits should
// share their fsyncs.
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		b.Run(fmt.Sprintf("sync=%v", !noSync), func(b *testing.B) {
			s, err := badgerstore.Open(b.TempDir(), badgerstore.Options{NoSync: noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			turn := turns(1, 1)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16) // 32 committers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				k := history.Key{Tenant: "t", Conversation: "c" + strconv.FormatInt(next.Add(1), 10)}
				var version uint64
				for pb.Next() {
					m, err := s.Commit(ctx, k, history.Change{Version: version, Append: turn, Now: 1})
					if err != nil {
						b.Fatal(err)
					}
					version = m.Version
				}
			})
		})
	}
}

// Query.After is a hard lower bound: nothing at or before it is read,
// whatever MinMessages asks.
func TestLoadAfter(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "after"}
	mustCommit(t, s, k, history.Change{Append: turns(1, 10)}) // seqs 1-20
	for _, after := range []uint64{0, 6, 19, 20} {
		snap, err := s.Load(ctx, k, history.Query{MinMessages: 100, Tokens: 1 << 20, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if want := 20 - int(after); len(snap.Tail) != want || (want > 0 && snap.Tail[0].Seq != after+1) {
			t.Errorf("After %d: got %d messages from %v, want %d from %d", after, len(snap.Tail), tailSeqs(snap), want, after+1)
		}
	}
}

// A summary lands with its own compare-and-set on covered-through: it
// neither checks nor bumps the version, so a chat commit computed before
// it still commits (and keeps it), and a summary made from a state
// another summary has left is refused with ErrStale.
func TestSummaryLanding(t *testing.T) {
	s := open(t, t.TempDir())
	k := history.Key{Tenant: "t", Conversation: "sum"}
	before := mustCommit(t, s, k, history.Change{Append: turns(1, 4)}) // seqs 1-8
	land := func(base, through uint64) (history.Meta, error) {
		return s.Commit(ctx, k, history.Change{Summary: &history.SummaryChange{Base: base,
			Summary:      history.Summary{Text: "so far", Through: through, Turns: int(through / 2), Tokens: 5, At: 7},
			PromptTokens: 100, CompletionTokens: 20}})
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
	m, err = s.Commit(ctx, k, history.Change{Version: before.Version, Append: turns(5, 1), Now: 9})
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
