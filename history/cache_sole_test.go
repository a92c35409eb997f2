package history_test

import (
	"context"
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
