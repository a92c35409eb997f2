package proxy

import (
	"context"
	"sync"

	"github.com/recallproxy/recall/history"
)

// Locks serialises the work on each conversation in one process: chat
// requests, and whatever else changes conversations (the conversation
// API, retention) when it shares the server's Locks (Config.Locks). A
// lock is a one-slot channel, so waiting can give up with a context;
// entries are reference counted and removed when nobody holds or waits,
// so the map is bounded by the conversations in flight. The zero value is
// ready to use.
type Locks struct {
	mu sync.Mutex
	m  map[history.Key]*convLock
}

type convLock struct {
	ch   chan struct{}
	refs int
}

// Acquire waits for the conversation's lock until ctx ends. The returned
// release must be called exactly once.
func (l *Locks) Acquire(ctx context.Context, k history.Key) (release func(), err error) {
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

func (l *Locks) unref(k history.Key, cl *convLock) {
	l.mu.Lock()
	cl.refs--
	if cl.refs == 0 {
		delete(l.m, k)
	}
	l.mu.Unlock()
}

// active returns the number of conversations with a request in flight.
func (l *Locks) active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// Lock takes the per-conversation lock chat requests take (Config.Locks),
// for background work that changes a conversation (retention): the
// returned release must be called exactly once.
func (s *Server) Lock(ctx context.Context, k history.Key) (release func(), err error) {
	return s.cfg.Locks.Acquire(ctx, k)
}
