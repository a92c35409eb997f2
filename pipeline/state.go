package pipeline

import (
	"context"
	"time"

	"github.com/recallproxy/recall/wire"
)

// An exchange's state is in three parts:
//
//	Decision  what the plan decided: made once, read by the commit,
//	          the only part another goroutine reads (decision.go)
//	Record    what the exchange's record and log line report: its
//	          times, the upstream's usage, what the commit stored
//	Owned     what the exchange holds until it ends: its deadline and
//	          the conversation's lock, one owner at a time

// Record is what an exchange's record and log line report besides its
// decision: it started at Start, was sent upstream at Sent, the
// upstream's answer's headers came at FirstByte (as a Stream or not) and
// its end at UpstreamDone; the commit stored the seqs
// CommittedFrom..CommittedTo of the conversation's incarnation
// CommittedIncarnation, with the upstream's reported Usage, or failed
// (CommitFailed).
type Record struct {
	Start, Sent, FirstByte, UpstreamDone time.Time
	Stream                               bool
	Usage                                wire.Usage
	CommittedFrom, CommittedTo           uint64
	CommittedIncarnation                 uint64
	CommitFailed                         bool
	// CacheBreakpoint is the seq of the message whose end the request
	// marked for the upstream's prompt cache (0: none).
	CacheBreakpoint uint64
}

// Owned is what an exchange holds until it ends: its deadline's Cancel
// and the conversation's lock (Release). One party owns it at a time: the
// handler, and for a stream the relay goroutine, to which the handler
// moves it with Take. Its End runs exactly once, wherever it was moved.
type Owned struct {
	Cancel  context.CancelFunc
	Release func()
}

// Take moves what o holds to the returned value: o then holds nothing,
// and its End does nothing.
func (o *Owned) Take() Owned {
	t := *o
	*o = Owned{}
	return t
}

// End releases the lock, then cancels the deadline.
func (o *Owned) End() {
	if o.Release != nil {
		o.Release()
	}
	if o.Cancel != nil {
		o.Cancel()
	}
	*o = Owned{}
}
