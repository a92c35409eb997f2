package storetest

import (
	"slices"
	"testing"

	"github.com/recallproxy/recall/history"
)

// testThreads: a conversation's threads are listed, sorted, and only its
// own: not a conversation whose id extends its id, not its parent's other
// conversations, not another tenant's, not a deleted one; a thread with
// many messages is listed once.
func testThreads(t *testing.T, s history.Store) {
	tl, ok := s.(history.ThreadLister)
	if !ok {
		t.Fatalf("%T does not implement history.ThreadLister", s)
	}
	k := history.Key{Tenant: "t", Conversation: "proj"}
	commit := func(tenant, conv string, n int) {
		t.Helper()
		var msgs []history.Message
		for range n {
			msgs = append(msgs, User("thread work", 1), Asst("done", 1))
		}
		MustCommit(t, s, history.Key{Tenant: tenant, Conversation: conv}, history.Change{Append: msgs})
	}
	commit("t", "proj", 1)
	commit("t", history.ThreadID("proj", "agent-b"), 40)
	commit("t", history.ThreadID("proj", "agent-a"), 1)
	commit("t", history.ThreadID("proj", "gone"), 1)
	commit("t", "proj-2", 1)                            // extends the id, not a thread
	commit("t", history.ThreadID("proj-2", "agent"), 1) // another conversation's thread
	commit("t", history.ThreadID("pro", "j"), 1)        // sorts near, another's
	commit("t2", history.ThreadID("proj", "agent-c"), 1)
	if err := s.Delete(ctx, history.Key{Tenant: "t", Conversation: history.ThreadID("proj", "gone")}); err != nil {
		t.Fatal(err)
	}
	got, err := tl.Threads(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"proj~agent-a", "proj~agent-b"}; !slices.Equal(got, want) {
		t.Errorf("got threads %q, want %q", got, want)
	}
	if got, err := tl.Threads(ctx, history.Key{Tenant: "t", Conversation: "none"}); err != nil || len(got) != 0 {
		t.Errorf("a conversation without threads: got %q, %v", got, err)
	}
}
