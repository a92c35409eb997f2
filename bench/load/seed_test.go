package main

import (
	"context"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// Seeded conversations are left as Recall's default summaries would leave
// them: past trigger_turns, a summary covering all but keep_turns to
// trigger_turns (conversation c0: keep_turns, c1: one more).
func TestSeedLeavesADefaultSummary(t *testing.T) {
	for _, tc := range []struct {
		turns       int
		wantThrough uint64
	}{{10, 0}, {50, 94}} {
		dir := t.TempDir()
		o := options{seedDir: dir, conversations: 2, prefill: tc.turns, summarized: true, convPrefix: "c", namespace: "ns", model: "gpt-4o-mini", words: 40}
		if err := seed(o); err != nil {
			t.Fatal(err)
		}
		s, err := badgerstore.Open(dir, badgerstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := s.Load(context.Background(), history.Key{Tenant: "ns", Conversation: "c0"}, history.Query{})
		if snap1, err1 := s.Load(context.Background(), history.Key{Tenant: "ns", Conversation: "c1"}, history.Query{}); err1 != nil || (tc.wantThrough > 0 && (snap1.Meta.Summary == nil || snap1.Meta.Summary.Through != tc.wantThrough-2)) {
			t.Errorf("%d turns, c1: got summary %+v, %v; want one through seq %d", tc.turns, snap1.Meta.Summary, err1, tc.wantThrough-2)
		}
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		sm := snap.Meta.Summary
		switch {
		case tc.wantThrough == 0 && sm != nil:
			t.Errorf("%d turns: got a summary through %d, want none", tc.turns, sm.Through)
		case tc.wantThrough > 0 && (sm == nil || sm.Through != tc.wantThrough || sm.Turns != tc.turns-3 || sm.Text == "" || sm.Tokens > 1000):
			t.Errorf("%d turns: got summary %+v, want one through seq %d covering %d turns within 1,000 tokens", tc.turns, sm, tc.wantThrough, tc.turns-3)
		}
	}
}
