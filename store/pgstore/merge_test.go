package pgstore_test

import (
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestCommitsWakeThePendingListMerge: once MergeEvery messages were
// committed, the Store merges the search index's pending list itself, off
// the commits (a commit that filled the list past its limit would merge
// it, for 200 ms), and what it merged is still found.
func TestCommitsWakeThePendingListMerge(t *testing.T) {
	type merge struct {
		pages int64
		err   error
	}
	merged := make(chan merge, 16)
	s := open(t, pgtest.DB(t), pgstore.Options{MergeEvery: 8, OnMerge: func(pages int64, err error) { merged <- merge{pages, err} }})
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 3 { // 6 messages: no merge yet
		commit(t, s, k, history.Change{Append: turns(i, 1)})
	}
	select {
	case m := <-merged:
		t.Fatalf("got a merge after 6 messages (%d pages), want none before 8", m.pages)
	default:
	}
	commit(t, s, k, history.Change{Append: turns(3, 1)})
	select {
	case m := <-merged:
		if m.err != nil || m.pages == 0 {
			t.Fatalf("got a merge of %d pages (%v), want the pending pages merged", m.pages, m.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no merge 10s after 8 messages were committed")
	}
	hits, err := s.Search(testCtx(t), "t", history.SearchQuery{Text: "question", Limit: 10})
	if err != nil || len(hits) != 4 {
		t.Fatalf("got %d hits (%v), want the 4 questions", len(hits), err)
	}
}

// TestMergeSkipsWhileAnotherMerges: a Store woken to merge while another
// replica's merge holds the merge lock skips its turn, instead of
// waiting behind it with a connection of its pool, and leaves the
// pending list to the next wake.
func TestMergeSkipsWhileAnotherMerges(t *testing.T) {
	url := pgtest.DB(t)
	merged := make(chan int64, 16)
	s := open(t, url, pgstore.Options{MergeEvery: 8, OnMerge: func(pages int64, err error) {
		if err != nil {
			t.Errorf("merge: %v", err)
		}
		merged <- pages
	}})
	other := connect(t, url) // another replica, merging
	if _, err := other.Exec(testCtx(t), `SELECT pg_advisory_lock($1)`, pgstore.MergeKey); err != nil {
		t.Fatal(err)
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 4 {
		commit(t, s, k, history.Change{Append: turns(i, 1)})
	}
	select {
	case pages := <-merged:
		if pages != 0 {
			t.Fatalf("the Store merged %d pages while another held the merge lock, want a skipped merge", pages)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no merge reported 10s after 8 messages were committed: did it wait for the lock?")
	}
	if _, err := other.Exec(testCtx(t), `SELECT pg_advisory_unlock($1)`, pgstore.MergeKey); err != nil {
		t.Fatal(err)
	}
	var pending int64
	if err := other.QueryRow(testCtx(t), `SELECT gin_clean_pending_list('recall_messages_search')`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending == 0 {
		t.Fatal("the pending list was empty after the skipped merge, want the 8 messages' entries still pending")
	}
}
