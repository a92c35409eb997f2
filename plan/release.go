package plan

import "github.com/recallproxy/recall/internal/slicepool"

// messageArrays keeps the arrays released plans laid their messages out
// in: a plan over a 16,000-token window of short turns is some 450
// messages, 33 KB allocated, zeroed and scanned on every request
// otherwise. A plan over a long conversation's whole history does not
// stay behind (history's windows are bounded alike).
var messageArrays = slicepool.Pool[Message]{Max: 1024}

// Release gives back the array p's Messages lie in, for the next plan,
// and leaves p.Messages nil. Nothing may read p.Messages, or a slice of
// it, after: the exchange releases its plan once it is done (logged,
// recorded and inspected). The rest of p stays as it was. Release on a
// plan released already, or not laid out, does nothing.
func (p *Plan) Release() {
	box := p.box
	p.Messages, p.box = nil, nil
	messageArrays.Put(box)
}
