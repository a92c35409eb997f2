package proxy

import (
	"context"
	"sync"

	"github.com/recallproxy/recall/history"
)

// convLocks serialises requests per conversation. A lock is a one-slot
// channel, so waiting can give up with a context; entries are reference
// counted and removed when nobody holds or waits, so the map is bounded by
// the conversations in flight.
type convLocks struct {
	mu sync.Mutex
	m  map[history.Key]*convLock
}

type convLock struct {
	ch   chan struct{}
	refs int
}

// acquire waits for the conversation's lock until ctx ends. The returned
// release must be called exactly once.
func (l *convLocks) acquire(ctx context.Context, k history.Key) (release func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[history.Key]*convLock)
	}
	cl := l.m[k]
	if cl == nil {
		cl = &convLock{ch: make(chan struct{}, 1)}
		l.m[k] = cl
	}
	cl.refs++
	l.mu.Unlock()

	select {
	case cl.ch <- struct{}{}:
		return func() {
			<-cl.ch
			l.unref(k, cl)
		}, nil
	case <-ctx.Done():
		l.unref(k, cl)
		return nil, ctx.Err()
	}
}

func (l *convLocks) unref(k history.Key, cl *convLock) {
	l.mu.Lock()
	cl.refs--
	if cl.refs == 0 {
		delete(l.m, k)
	}
	l.mu.Unlock()
}

// active returns the number of conversations with a request in flight.
func (l *convLocks) active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
