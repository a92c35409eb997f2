package plan

import "sync"

// messageArrays keeps the arrays released plans laid their messages out
// in (*[]Message, emptied): a plan over a 16,000-token window of short
// turns is some 450 messages, 33 KB allocated, zeroed and scanned on
// every request otherwise.
var messageArrays sync.Pool

// maxPooledPlan bounds, in messages, the arrays messageArrays keeps: a
// plan over a long conversation's whole history does not stay behind
// (history's windows are bounded alike).
const maxPooledPlan = 1024

// messageArray returns a box holding an empty array for n messages, a
// released one if one is at hand and big enough. A new array has room
// for a quarter more: a conversation's plan grows by a turn a request,
// and an array of just its size would be too small for the next.
func messageArray(n int) *[]Message {
	box, _ := messageArrays.Get().(*[]Message)
	if box == nil {
		box = new([]Message)
	}
	if cap(*box) < n {
		*box = make([]Message, 0, n+n/4)
	}
	return box
}

// Release gives back the array p's Messages lie in, for the next plan,
// and leaves p.Messages nil. Nothing may read p.Messages, or a slice of
// it, after: the exchange releases its plan once it is done (logged,
// recorded and inspected). The rest of p stays as it was. Release on a
// plan released already, or not laid out, does nothing.
func (p *Plan) Release() {
	box := p.box
	p.Messages, p.box = nil, nil
	if box == nil {
		return
	}
	all := (*box)[:cap(*box)]
	if cap(all) > maxPooledPlan {
		*box = nil
	} else {
		clear(all) // the pool keeps no message's bytes alive
		*box = all[:0]
	}
	messageArrays.Put(box)
}
