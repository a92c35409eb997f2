// Package slicepool recycles a request's arrays: the plan's messages, the
// window's, the encoded context's. Each is taken for n entries, handed
// back emptied (the pool keeps none of its elements' memory alive), and
// not kept past a bound, so that a long conversation's array does not
// stay behind.
package slicepool

import "sync"

// Pool keeps arrays of T, boxed (*[]T: a box is allocated once and goes
// back and forth with its array). Its zero value is not ready: Max must
// be set.
type Pool[T any] struct {
	// Max bounds, in entries, the arrays the pool keeps.
	Max  int
	pool sync.Pool
}

// Get returns a box holding an empty array for n entries, a released one
// if one is at hand and big enough. A new array has room for a quarter
// more: a conversation's arrays grow by a turn a request, and one of
// just its size would be too small for the next.
func (p *Pool[T]) Get(n int) *[]T {
	box, _ := p.pool.Get().(*[]T)
	if box == nil {
		box = new([]T)
	}
	if cap(*box) < n {
		*box = make([]T, 0, n+n/4)
	}
	return box
}

// Put empties box's array, whatever its length, and keeps it for a later
// Get, unless it holds more than Max entries. Nothing may use the array
// after. Put(nil) does nothing.
func (p *Pool[T]) Put(box *[]T) {
	if box == nil {
		return
	}
	if all := (*box)[:cap(*box)]; cap(all) > p.Max {
		*box = nil
	} else {
		clear(all)
		*box = all[:0]
	}
	p.pool.Put(box)
}
