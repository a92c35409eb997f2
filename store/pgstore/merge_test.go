package pgstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/store/storetest"
)

// prose is a turn whose question and answer hold 300 distinct words
// each, as long prose does: eight of them fill the search index's
// pending list past 64 kB, the least list a merge merges.
func prose(i int) []history.Message {
	words := func(kind string) string {
		var b strings.Builder
		for w := range 300 {
			fmt.Fprintf(&b, "%s%d ", kind, w)
		}
		return b.String()
	}
	return storetest.TurnsSaying(i, 1, words("q")+"question ", words("a")+"answer ")
}

// pendingPages merges what the search index's pending list still holds,
// from another connection, and returns how many pages that was.
func pendingPages(t *testing.T, url string) int64 {
	t.Helper()
	var pages int64
	if err := connect(t, url).QueryRow(testCtx(t), `SELECT gin_clean_pending_list('recall_messages_search')`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	return pages
}

// TestCommitsWakeThePendingListMerge: once MergeEvery messages were
// committed, the Store merges the search index's pending list itself, off
// the commits (a commit that filled the list past its limit would merge
// it, for 200 ms), leaves none of the merge's placeholder behind, and
// what it merged is still found.
func TestCommitsWakeThePendingListMerge(t *testing.T) {
	type merge struct {
		merged bool
		err    error
	}
	url := pgtest.DB(t)
	merged := make(chan merge, 16)
	s := open(t, url, pgstore.Options{MergeEvery: 16, OnMerge: func(ok bool, err error) { merged <- merge{ok, err} }})
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 7 { // 14 messages: no merge yet
		commit(t, s, k, history.Change{Append: prose(i)})
	}
	select {
	case m := <-merged:
		t.Fatalf("got a merge after 14 messages (%v, %v), want none before 16", m.merged, m.err)
	default:
	}
	commit(t, s, k, history.Change{Append: prose(7)})
	select {
	case m := <-merged:
		if m.err != nil || !m.merged {
			t.Fatalf("got a merge that merged: %v (%v), want the pending list merged", m.merged, m.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no merge 10s after 16 messages were committed")
	}
	if pages := pendingPages(t, url); pages != 0 {
		t.Fatalf("%d pages still pending after the merge, want the list merged", pages)
	}
	var placeholders int
	if err := connect(t, url).QueryRow(testCtx(t), `SELECT count(*) FROM recall_messages WHERE tenant = ''`).Scan(&placeholders); err != nil || placeholders != 0 {
		t.Fatalf("%d placeholder rows (%v) after the merge, want none", placeholders, err)
	}
	hits, err := s.Search(testCtx(t), "t", history.SearchQuery{Text: "question", Limit: 10})
	if err != nil || len(hits) != 8 {
		t.Fatalf("got %d hits (%v), want the 8 questions", len(hits), err)
	}
}

// TestMergeSkipsWhileAnotherMerges: a Store woken to merge while another
// replica's merge holds the merge lock skips its turn, instead of
// waiting behind it with a connection of its pool, and leaves the
// pending list to the next wake.
func TestMergeSkipsWhileAnotherMerges(t *testing.T) {
	url := pgtest.DB(t)
	merged := make(chan bool, 16)
	s := open(t, url, pgstore.Options{MergeEvery: 16, OnMerge: func(ok bool, err error) {
		if err != nil {
			t.Errorf("merge: %v", err)
		}
		merged <- ok
	}})
	other := connect(t, url) // another replica, merging
	if _, err := other.Exec(testCtx(t), `SELECT pg_advisory_lock($1)`, pgstore.MergeKey); err != nil {
		t.Fatal(err)
	}
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 8 {
		commit(t, s, k, history.Change{Append: prose(i)})
	}
	select {
	case ok := <-merged:
		if ok {
			t.Fatal("the Store merged while another held the merge lock, want a skipped merge")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no merge reported 10s after 16 messages were committed: did it wait for the lock?")
	}
	if _, err := other.Exec(testCtx(t), `SELECT pg_advisory_unlock($1)`, pgstore.MergeKey); err != nil {
		t.Fatal(err)
	}
	if pendingPages(t, url) == 0 {
		t.Fatal("the pending list was empty after the skipped merge, want the 16 messages' entries still pending")
	}
}
