package api

import (
	"context"
	"sync"

	"github.com/recallproxy/recall/internal/apierr"
)

// retryAfter is the Retry-After of a 429, in seconds: heavy calls are
// bounded in time, so a slot frees soon.
const retryAfter = "1"

// gate bounds the heavy calls (search, export, import): at most a slot
// each of a global number running at once, so that chat requests keep
// CPU, and at most perTenant of one namespace in flight, running or
// waiting, so that one tenant's flood waits behind itself and leaves the
// others' calls their turn.
type gate struct {
	slots     chan struct{}
	perTenant int

	mu     sync.Mutex
	flying map[string]int // namespace -> heavy calls in flight
}

func newGate(global, perTenant int) *gate {
	return &gate{slots: make(chan struct{}, global), perTenant: perTenant, flying: map[string]int{}}
}

// enter admits a heavy call of namespace ns: apierr.HeavyBusy at once if ns
// has perTenant calls in flight, else once a slot is free, or
// apierr.HeavyBusy if ctx ends first. The returned leave must be called
// exactly once, when the call's work is over.
func (g *gate) enter(ctx context.Context, ns string) (leave func(), err error) {
	g.mu.Lock()
	if g.flying[ns] >= g.perTenant {
		g.mu.Unlock()
		return nil, apierr.HeavyBusy
	}
	g.flying[ns]++
	g.mu.Unlock()
	out := func() {
		g.mu.Lock()
		if g.flying[ns]--; g.flying[ns] == 0 {
			delete(g.flying, ns)
		}
		g.mu.Unlock()
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		out()
		return nil, apierr.HeavyBusy
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-g.slots
			out()
		})
	}, nil
}
