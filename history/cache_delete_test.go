package history_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// pausingStore stops each Load after it read the store, until released.
type pausingStore struct {
	history.Store
	read    chan struct{}
	release chan struct{}
}

func (p *pausingStore) Load(ctx context.Context, k history.Key, q history.Query) (history.Snapshot, error) {
	snap, err := p.Store.Load(ctx, k, q)
	p.read <- struct{}{}
	<-p.release
	return snap, err
}

// A Load that read a conversation before a Delete finished never leaves
// it cached: the next Load sees it gone. List and Search pass through.
func TestCacheDeleteRacingALoad(t *testing.T) {
	ctx := context.Background()
	store := badgertest.Open(t)
	k := history.Key{Tenant: "t", Conversation: "c"}
	if _, err := store.Commit(ctx, k, history.Change{Append: []history.Message{history.User("remember the walrus")}, Now: 1}); err != nil {
		t.Fatal(err)
	}
	p := &pausingStore{Store: store, read: make(chan struct{}), release: make(chan struct{})}
	cache := history.NewCache(p, 1<<20, 0)
	if page, _, err := cache.List(ctx, "t", history.ListQuery{Limit: 5}); err != nil || len(page) != 1 {
		t.Fatalf("List through the cache: got %v, %v; want the conversation", page, err)
	}
	if hits, err := cache.Search(ctx, "t", history.SearchQuery{Text: "walrus", Limit: 5}); err != nil || len(hits) != 1 {
		t.Fatalf("Search through the cache: got %v, %v; want the message", hits, err)
	}

	loaded := make(chan error, 1)
	go func() {
		_, err := cache.Load(ctx, k, history.Query{})
		loaded <- err
	}()
	wait := func(ch chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("the load did not read the store")
		}
	}
	wait(p.read) // the Load read the conversation
	if err := cache.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	p.release <- struct{}{}
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	go func() { // the next Load reads the store (unless the cache wrongly answers)
		<-p.read
		p.release <- struct{}{}
	}()
	snap, err := cache.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Version != 0 || len(snap.Tail) != 0 {
		t.Errorf("after the delete: got %+v, %v; want the conversation gone", snap, err)
	}
	if page, _, err := cache.List(ctx, "t", history.ListQuery{Limit: 5}); err != nil || len(page) != 0 {
		t.Errorf("List after the delete: got %v, %v; want nothing", page, err)
	}
}
