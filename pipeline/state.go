package pipeline

import (
	"context"
	"time"

	"github.com/recallproxy/recall/wire"
)

// An exchange's state is in three parts, besides what the request is
// (its caller, key, thread, retry key, protocols: set while it is read
// and decoded):
//
//	Decision  what the plan decided: the plan stage makes it once and
//	          nothing writes it after, so it is the one part another
//	          goroutine reads (the commit's, which may outlive the
//	          handler past its deadline, reads the decision and the
//	          change, nothing else; the change points to the exchange's
//	          lease, which guards itself)
//	Record    what the exchange's record and log line report: its
//	          times, the upstream's usage, what the commit stored;
//	          written by whichever goroutine owns the exchange at the
//	          time: the handler, then the stream's relay it hands the
//	          exchange to
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
