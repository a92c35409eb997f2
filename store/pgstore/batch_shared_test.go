package pgstore_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestCommittersOfASharedStore: a Store alone on the database sends a
// batch on its second committer while its first batch is under way; once
// another Store shares the database, only one committer sends, so the
// commits made while a batch is under way wait and go in the next batch
// together (two replicas then send as many batches at once as one).
func TestCommittersOfASharedStore(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	soles := make(chan bool, 4)
	s := open(t, url, pgstore.Options{Committers: 2, OnSole: func(sole bool) { soles <- sole }})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	var (
		mu      sync.Mutex
		sizes   []int
		holding = true
	)
	queued := make(chan int, 1024)
	sent := make(chan int, 1024) // batches sent while the first is held
	first, release := make(chan struct{}), make(chan struct{})
	var releaseMu sync.Mutex
	let := func() { // lets the held batch go, once (a failing test too: Close waits for it)
		releaseMu.Lock()
		defer releaseMu.Unlock()
		select {
		case <-release:
		default:
			close(release)
		}
	}
	t.Cleanup(let)
	pgstore.BatchHooks(s, func(n int) { queued <- n }, func(n int) {
		mu.Lock()
		sizes = append(sizes, n)
		hold := holding && len(sizes) == 1
		held := holding && len(sizes) > 1
		mu.Unlock()
		if hold {
			releaseMu.Lock()
			f, r := first, release
			releaseMu.Unlock()
			close(f)
			<-r
		} else if held {
			sent <- n
		}
	})
	const n = 6
	metas := make([]history.Meta, n)
	for i := range n {
		metas[i] = create(t, s, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)})
	}
	var wg sync.WaitGroup
	commit := func(i, turn int) {
		defer wg.Done()
		m, err := s.Commit(ctx, history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)}, plain(metas[i], turn))
		if err != nil {
			t.Error(err)
			return
		}
		metas[i] = m
	}
	// Alone: the second committer sends while the first is held.
	wg.Add(2)
	go commit(0, 1)
	<-first
	go commit(1, 1)
	select {
	case <-sent:
	case <-time.After(time.Minute):
		t.Fatal("alone on the database: no batch sent while the first was under way")
	}
	let()
	wg.Wait()

	open(t, url, pgstore.Options{})
	if <-soles {
		t.Fatal("a second Store opened: still the sole writer")
	}
	mu.Lock()
	sizes, holding = nil, true
	mu.Unlock()
	releaseMu.Lock()
	first, release = make(chan struct{}), make(chan struct{})
	releaseMu.Unlock()
	for len(queued) > 0 {
		<-queued
	}
	wg.Add(n)
	go commit(0, 2)
	<-first
	for len(queued) > 0 { // the first commit's own
		<-queued
	}
	for i := 1; i < n; i++ {
		go commit(i, 2)
	}
	deadline := time.After(time.Minute)
	for waiting := 0; waiting < n-1; {
		select {
		case waiting = <-queued:
		case size := <-sent:
			t.Fatalf("shared: a batch of %d sent while the first was under way", size)
		case <-deadline:
			t.Fatalf("shared: %d commits never queued", n-1)
		}
	}
	let()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if want := []int{1, n - 1}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("shared: batches of %v, want %v", sizes, want)
	}
}
