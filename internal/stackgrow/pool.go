package stackgrow

import "sync"

// Pool runs functions on goroutines whose stacks have grown already,
// kept between uses: a goroutine made per request and grown with Grow
// still paid for its stack each time (taken from the heap when the
// processor's cache had none, copied once, freed at exit: 5.6 µs of CPU a
// durable chat request in the load script's profiles, for the commit's
// goroutine alone). One that finishes its function waits, idle, for the
// next; past Max of them idle, it exits.
//
// The zero Pool is ready; Close ends the idle goroutines and makes every
// later one exit when its function returns.
type Pool struct {
	// Max bounds the goroutines kept idle (0: DefaultMax).
	Max int

	mu     sync.Mutex
	idle   []*runner
	closed bool

	// Tests: called when a goroutine has parked idle, and when one ends.
	parked, ended func()
}

// DefaultMax is Pool.Max's default: the functions in flight at once that
// a proxy's Pool keeps goroutines for (each keeps a stack of Size bytes,
// half of it after a collection shrinks an idle one's).
const DefaultMax = 256

// runner is a goroutine of a Pool: it runs the functions sent on work
// until work is closed.
type runner struct{ work chan func() }

// Go runs fn on one of p's idle goroutines, or a new one.
func (p *Pool) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		r.work <- fn
		return
	}
	p.mu.Unlock()
	r := &runner{work: make(chan func(), 1)}
	r.work <- fn
	go p.run(r)
}

// run is r's goroutine: its one growth, then its functions.
func (p *Pool) run(r *runner) {
	if p.ended != nil {
		defer p.ended()
	}
	Grow()
	for fn := range r.work {
		fn()
		if !p.park(r) {
			return
		}
		if p.parked != nil {
			p.parked()
		}
	}
}

// park keeps r idle, unless p is closed or has Max idle already.
func (p *Pool) park(r *runner) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	max := p.Max
	if max <= 0 {
		max = DefaultMax
	}
	if p.closed || len(p.idle) >= max {
		return false
	}
	p.idle = append(p.idle, r)
	return true
}

// Close ends p's idle goroutines; those running end when their functions
// return. Go still runs functions after Close, each on a goroutine of its
// own.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, r := range p.idle {
		close(r.work)
	}
	p.idle = nil
}
