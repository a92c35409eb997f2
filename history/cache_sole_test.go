package history_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// soleStore is a memStore other processes may write (a HeadReader) that
// reports whether this process is its only writer (a SoleWriter).
type soleStore struct {
	*memStore
	heads int    // Head calls
	epoch uint64 // 0: not the only writer
}

func (s *soleStore) Head(context.Context, history.Key) (history.Head, error) {
	s.heads++
	return history.HeadOf(&s.meta), nil
}

func (s *soleStore) Sole() (uint64, bool) { return s.epoch, s.epoch != 0 }

// TestCacheTrustsTheSoleWriter: over a store that several processes may
// write, the cache reads the conversation's head before each hit, except
// while the store reports this process its only writer and the entry was
// loaded, written or checked in the current epoch; a new epoch (others
// may have written meanwhile) checks each entry once more.
func TestCacheTrustsTheSoleWriter(t *testing.T) {
	ctx := context.Background()
	s := &soleStore{memStore: &memStore{}}
	c := history.NewCache(s, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "c"}
	turn := func(n int) []history.Message {
		return []history.Message{
			{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"q"}`), Tokens: n},
			{Role: wire.RoleAssistant, Raw: []byte(`{"role":"assistant","content":"a"}`), Tokens: n},
		}
	}
	q := history.Query{MinMessages: 100}
	commit := func() {
		t.Helper()
		if _, err := c.Commit(ctx, k, history.Change{Version: s.meta.Version, Now: 1, Append: turn(1)}); err != nil {
			t.Fatal(err)
		}
	}
	load := func(what string, wantHeads, wantLoads int) {
		t.Helper()
		heads, loads := s.heads, s.loads
		if _, err := c.Load(ctx, k, q); err != nil {
			t.Fatal(err)
		}
		if got := s.heads - heads; got != wantHeads {
			t.Errorf("%s: %d head reads, want %d", what, got, wantHeads)
		}
		if got := s.loads - loads; got != wantLoads {
			t.Errorf("%s: %d store loads, want %d", what, got, wantLoads)
		}
	}
	commit() // cached (epoch 0: shared)
	load("shared", 1, 0)
	load("shared again", 1, 0)
	s.epoch = 1
	load("sole, the entry not checked in this epoch", 1, 0)
	load("sole, checked", 0, 0)
	commit()
	load("sole, after its own commit", 0, 0)
	s.epoch = 0
	load("shared once more", 1, 0)
	s.epoch = 2
	load("sole in a new epoch", 1, 0)
	load("sole in a new epoch, checked", 0, 0)
	s.epoch = 3
	commit() // written in epoch 3: current as the commit left it
	load("sole, written in this epoch", 0, 0)
}

// TestCacheWalksTheEntry: Messages reads the active messages from the
// cached entry when Load would trust it and it holds every one asked for,
// the same messages the store gives; from the store while shared, for
// every message (inactive ones included), and for messages older than
// the entry holds.
func TestCacheWalksTheEntry(t *testing.T) {
	ctx := context.Background()
	s := &soleStore{memStore: &memStore{}, epoch: 1}
	c := history.NewCache(s, 0, 0)
	k := history.Key{Tenant: "t", Conversation: "c"}
	for i := range 4 {
		_, err := c.Commit(ctx, k, history.Change{Version: s.meta.Version, Now: 1, Append: []history.Message{
			{Role: wire.RoleUser, Raw: fmt.Appendf(nil, `{"role":"user","content":"q%d"}`, i), Tokens: 10},
			{Role: wire.RoleAssistant, Raw: fmt.Appendf(nil, `{"role":"assistant","content":"a%d"}`, i), Tokens: 10}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk := func(what string, r history.Store, after uint64, all bool, wantWalks int) []history.Message {
		t.Helper()
		walks := s.walks
		var got []history.Message
		if err := r.Messages(ctx, k, after, all, func(m history.Message) bool { got = append(got, m); return true }); err != nil {
			t.Fatal(err)
		}
		if n := s.walks - walks; n != wantWalks {
			t.Errorf("%s: %d store walks, want %d", what, n, wantWalks)
		}
		return got
	}
	same := func(what string, after uint64, all bool, wantWalks int) {
		t.Helper()
		got := walk(what, c, after, all, wantWalks)
		want := walk(what+" (the store)", s, after, all, 1)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %d messages %v, want the store's %d", what, len(got), got, len(want))
		}
	}
	same("sole, after 0", 0, false, 0)
	same("sole, after 5", 5, false, 0)
	same("sole, after the newest", 8, false, 0)
	same("every message", 0, true, 1)
	s.epoch = 0
	same("shared", 3, false, 1)

	// An entry holding only its newest messages: older ones from the store.
	s2 := &soleStore{memStore: &memStore{}, epoch: 1}
	c2 := history.NewCache(s2, 0, 200)
	for i := range 4 {
		if _, err := c2.Commit(ctx, k, history.Change{Version: s2.meta.Version, Now: 1, Append: []history.Message{
			{Role: wire.RoleUser, Raw: []byte(strings.Repeat("q", 40+i)), Tokens: 10},
			{Role: wire.RoleAssistant, Raw: []byte(strings.Repeat("a", 40+i)), Tokens: 10}}}); err != nil {
			t.Fatal(err)
		}
	}
	s = s2
	if got := walk("older than the entry", c2, 0, false, 1); len(got) != 8 {
		t.Errorf("older than the entry: %d messages, want 8", len(got))
	}
	if got := walk("the entry's newest", c2, 7, false, 0); len(got) != 1 {
		t.Errorf("the entry's newest: %d messages, want 1", len(got))
	}
}
