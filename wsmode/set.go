package wsmode

import (
	"sync"
	"time"
)

// set is a server's open sockets, for shutdown: fasthttp forgets a
// connection once it is hijacked.
type set struct {
	mu       sync.Mutex
	open     map[*socket]struct{}
	wg       sync.WaitGroup
	draining chan struct{} // closed by drain
	drained  bool
}

func newSet() *set {
	return &set{open: make(map[*socket]struct{}), draining: make(chan struct{})}
}

// add counts k in, unless the set drains.
func (t *set) add(k *socket) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drained {
		return false
	}
	t.open[k] = struct{}{}
	t.wg.Add(1)
	return true
}

func (t *set) remove(k *socket) {
	t.mu.Lock()
	delete(t.open, k)
	t.mu.Unlock()
	t.wg.Done()
}

// drain asks every socket to close once its turn in flight, if any, is
// answered, and refuses new ones.
func (t *set) drain() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.drained {
		t.drained = true
		close(t.draining)
	}
}

// wait returns a channel closed once every socket has closed.
func (t *set) wait() <-chan struct{} {
	c := make(chan struct{})
	go func() { t.wg.Wait(); close(c) }()
	return c
}

// closeAll ends every socket now: its reads and writes fail at once.
func (t *set) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	past := time.Now().Add(-time.Second)
	for k := range t.open {
		if k.ws != nil {
			_ = k.ws.NetConn().SetDeadline(past)
		}
	}
}
