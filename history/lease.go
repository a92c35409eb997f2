package history

import "sync"

// ExchangeLease is an exchange's hold on its conversation across the
// processes that share a store (the conversation's LeaseConversation
// lease): taken by the plan's read in that read's own round trip
// (Query.Lease), so that two replicas never plan from the same head, and
// dropped by the commit in the commit's own transaction (Change.Lease),
// or kept by the store past it for the process's next exchange
// (KeptWriter).
// Every path that does not commit calls Release. A store of one process,
// whose own locks order its exchanges, never takes it: Held stays false
// and Release does nothing.
//
// The zero value is a lease not taken. It is for one conversation: a
// store takes it on the key of the first read that carries it.
type ExchangeLease struct {
	mu   sync.Mutex
	hold LeaseHold
}

// LeaseHold is a store's side of an ExchangeLease it took.
type LeaseHold interface {
	// Release lets the lease go: the next process waiting for it may
	// take it. It is safe to call more than once, and after a commit
	// dropped the lease (then it does nothing).
	Release()
}

// ExchangeLeaser is implemented by a store several processes share whose
// reads take an ExchangeLease (Query.Lease, and Follower.Follow). The
// window cache asks it first, and reads the store only when it must.
type ExchangeLeaser interface {
	// HoldLease takes l on k if the store can without a round trip
	// (it is the only process writing: its leases are in memory), and
	// reports whether it holds it now. Otherwise the next read of k that
	// carries l takes it.
	HoldLease(k Key, l *ExchangeLease) bool
}

// Held reports whether a store holds l.
func (l *ExchangeLease) Held() bool { return l.Hold() != nil }

// Hold returns the store's hold on l, nil if none took it.
func (l *ExchangeLease) Hold() LeaseHold {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hold
}

// Take records that a store took l (for stores).
func (l *ExchangeLease) Take(h LeaseHold) {
	l.mu.Lock()
	l.hold = h
	l.mu.Unlock()
}

// Dropped records that the store let l go, as a commit that carried it
// does (for stores).
func (l *ExchangeLease) Dropped() { l.Take(nil) }

// Release lets l go if a store holds it; l may then be taken again.
func (l *ExchangeLease) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	h := l.hold
	l.hold = nil
	l.mu.Unlock()
	if h != nil {
		h.Release()
	}
}
