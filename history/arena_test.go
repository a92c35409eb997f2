package history_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/recallproxy/recall/history"
)

// TestCacheKeepsAConversationsTextBackToBack checks that the cache holds
// a conversation's messages' text back to back, in order, a separator
// between them: read whole from the store, in one run; grown turn by
// turn, in a few runs however many turns. The upstream body copies them
// in that order, and a copy from scattered text cost a memory stall per
// message.
func TestCacheKeepsAConversationsTextBackToBack(t *testing.T) {
	ctx, under, cache := memCache()
	k := history.Key{Tenant: "t", Conversation: "c"}
	var want [][]byte
	for i := range 40 {
		ch := history.Change{Append: []history.Message{history.User(fmt.Sprint("question ", i)), history.Asst(fmt.Sprint("answer ", i))}, Now: int64(i + 1)}
		if i > 0 {
			ch.Version = under.meta.Version
		}
		if _, err := cache.Commit(ctx, k, ch); err != nil {
			t.Fatal(err)
		}
		for _, m := range ch.Append {
			want = append(want, m.Raw)
		}
	}
	grown := loadFromMemory(t, cache, under, k, "a conversation the cache grew")
	if got := raws(grown.Tail); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("grown: got texts %q, want %q", got, want)
	}
	if runs := textRuns(grown.Tail); runs > len(grown.Tail)/8 {
		t.Errorf("grown over 40 turns: the text of %d messages lies in %d runs, want at most an eighth as many", len(grown.Tail), runs)
	}

	read := history.NewCache(under, 0, 0)
	if _, err := read.Load(ctx, k, wholeWindow); err != nil { // a miss: read from the store
		t.Fatal(err)
	}
	snap := loadFromMemory(t, read, under, k, "a conversation the cache read")
	if got := raws(snap.Tail); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("read: got texts %q, want %q", got, want)
	}
	if runs := textRuns(snap.Tail); runs != 1 {
		t.Errorf("read from the store: the text lies in %d runs, want 1", runs)
	}
}

// TestCacheTextIsNotAppendedInto checks that a message's text handed out
// has no room behind it: the next message's text follows, and an append
// to one must not write into it.
func TestCacheTextIsNotAppendedInto(t *testing.T) {
	ctx, under, cache := memCache()
	k := history.Key{Tenant: "t", Conversation: "c"}
	if _, err := cache.Commit(ctx, k, history.Change{Append: []history.Message{history.User("hello"), history.Asst("there")}, Now: 1}); err != nil {
		t.Fatal(err)
	}
	snap := loadFromMemory(t, cache, under, k, "the first load")
	first := snap.Tail[0].Raw
	if cap(first) != len(first) {
		t.Errorf("a message's text has capacity %d past its length %d", cap(first), len(first))
	}
	_ = append(first, `,"x"`...)
	again := loadFromMemory(t, cache, under, k, "the load after an append")
	if got, want := string(again.Tail[1].Raw), string(history.Asst("there").Raw); got != want {
		t.Errorf("after an append to the first message's text: the second's is %s, want %s", got, want)
	}
}

// textRuns counts the runs of msgs whose text lies back to back, one
// separator byte between a message's text and the next's.
func textRuns(msgs []history.Message) int {
	runs := 0
	for i := range msgs {
		if i == 0 || unsafe.SliceData(msgs[i].Raw) != (*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(msgs[i-1].Raw)), len(msgs[i-1].Raw)+1)) {
			runs++
		}
	}
	return runs
}

func raws(msgs []history.Message) [][]byte {
	out := make([][]byte, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Raw
	}
	return out
}
