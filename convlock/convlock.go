// Package convlock serialises the work on each conversation in one
// process: the requests proxy serves, and whatever else changes
// conversations (the conversation API, the Responses and Conversations
// state, retention) when it shares the one Table internal/app builds.
// Replicas that share a store coordinate through the store's leases
// (history.Leaser) besides.
package convlock

import (
	"context"
	"sync"

	"github.com/recallproxy/recall/history"
)

// Table holds a lock per conversation. A lock is a one-slot channel, so
// waiting can give up with a context; entries are reference counted and
// removed when nobody holds or waits, so the map is bounded by the
// conversations in flight. The zero value is ready to use.
type Table struct {
	mu sync.Mutex
	m  map[history.Key]*entry
}

type entry struct {
	ch   chan struct{}
	refs int
}

// Acquire waits for the conversation's lock until ctx ends. The returned
// release must be called exactly once.
func (t *Table) Acquire(ctx context.Context, k history.Key) (release func(), err error) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[history.Key]*entry)
	}
	e := t.m[k]
	if e == nil {
		e = &entry{ch: make(chan struct{}, 1)}
		t.m[k] = e
	}
	e.refs++
	t.mu.Unlock()

	select {
	case e.ch <- struct{}{}:
		return func() {
			<-e.ch
			t.unref(k, e)
		}, nil
	case <-ctx.Done():
		t.unref(k, e)
		return nil, ctx.Err()
	}
}

func (t *Table) unref(k history.Key, e *entry) {
	t.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(t.m, k)
	}
	t.mu.Unlock()
}

// Active returns the number of conversations whose lock is held or
// waited for.
func (t *Table) Active() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Refs returns how many callers hold or wait for k's lock.
func (t *Table) Refs(k history.Key) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[k]; e != nil {
		return e.refs
	}
	return 0
}
