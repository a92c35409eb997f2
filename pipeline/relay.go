package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Body is the response's body stream a relay writes and the server's
// connection reads (internal/streambody's Body).
type Body interface {
	io.Writer
	// End ends the writer's side: the reader gets io.EOF once it has
	// taken everything written.
	End()
	// Last makes the next write the writer's last: it ends the
	// writer's side with its bytes, in one step.
	Last()
	// Abort ends both sides with err.
	Abort(err error)
	// Wait waits until the reader's side is done and returns what
	// writing it to the connection ended with (nil: every byte went).
	Wait() error
}

// Upstream is an upstream's streamed answer as a relay reads it: its
// body (Read), a read waiting on it ended from another goroutine
// (Interrupt), and the answer ended once the relay is done with it
// (Release).
type Upstream interface {
	io.Reader
	// Interrupt makes a read blocked on the upstream return at once; it
	// may be called from any goroutine, and after Release.
	Interrupt()
	// Release ends the answer: a body read to its end gives its
	// connection back to the client's pool, any other closes it.
	Release()
}

// A WaitNotifier is an upstream body that knows when a read of it is to
// wait on the network (the bytes it already holds are read without
// waiting): a stream's events are flushed to the client then, not before
// every read (Stream). BeforeWait sets f to run before each such read
// (nil: none) and reports whether it will; an error from f is that
// read's, and nothing is read. f runs on the reading goroutine.
type WaitNotifier interface {
	BeforeWait(f func() error) bool
}

// Relay is the relay stage of a streamed answer, run by the goroutine
// the handler hands the exchange to: from then on that goroutine owns
// owned (the exchange's deadline and lock), up and the writer's side of
// out (the response's body stream, which the server's connection reads),
// and the handler touches none of them.
//
// work reads up, a read that waits on the upstream for idle ending the
// exchange (owned's Cancel), writes the client's stream to w, and returns
// nil only if it wrote everything it meant to, and must not keep w
// past returning (w is recycled). Relay then flushes w,
// waits until the server has written every byte to the connection
// (out.Wait), reads what is left of up (the last chunk of a
// body whose answer has ended, so that its connection is reused), and
// calls end with how the relay ended: nil, ErrClientGone when the client
// could not take the stream, or work's error. After end it releases up,
// then owned (the lock, then the deadline), then ends out.
//
// Past ctx's deadline (the exchange's) out is aborted, so that a client
// that takes nothing does not hold the conversation; ctx's end, the idle
// timer's included, interrupts a read waiting on the upstream.
func Relay(ctx context.Context, owned Owned, out Body, up Upstream, idle time.Duration,
	work func(w *bufio.Writer, upstream io.Reader) error, end func(err error)) {
	defer out.End()
	defer owned.End() // after the commit: the lock, then the deadline
	// A client that takes nothing must not hold the conversation past
	// the exchange's deadline: the deadline ends the body stream. (The
	// idle timer's cancel does not: the relay then ends the body
	// cleanly.) Either ends a read waiting on the upstream.
	defer context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			out.Abort(ctx.Err())
		}
		up.Interrupt()
	})()
	defer up.Release()

	// A stream that sends nothing for idle is ended.
	t := time.AfterFunc(idle, owned.Cancel)
	defer t.Stop()
	w := relayWriters.Get().(*bufio.Writer)
	w.Reset(out)
	defer func() {
		w.Reset(nil)
		relayWriters.Put(w)
	}()
	err := work(w, &idleReader{r: up, t: t, d: idle})
	if err == nil {
		// What w holds is the stream's end (CommitStream leaves it
		// there): it ends out as it reaches it, so that the server
		// takes it as the end, and writes it with the body's.
		out.Last()
	}
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("%w: %w", ErrClientGone, ferr)
	}
	if err == nil {
		// Every event is written: wait until the server has written
		// them to the connection, or could not.
		out.End()
		if werr := out.Wait(); werr != nil {
			err = fmt.Errorf("%w: %w", ErrClientGone, werr)
		}
	}
	if err == nil {
		drainAfterEnd(up)
	}
	end(err)
}

// relayWriters recycles the relays' buffered writers, one a stream: work
// must not keep its writer past returning. What a stream holds for its
// commit, or writes of what came at once, waits in it: at 4 KiB a
// Responses stream's first events (each Response object a kilobyte or
// more) filled it, and it went to the client before the commit.
var relayWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, relayBuffer) }}

const relayBuffer = 16 << 10

// Bound returns up's body bounded as Relay bounds the first answer's: a
// read that waits on the upstream for idle, or past ctx's end, is
// interrupted. release ends that and releases up.
func Bound(ctx context.Context, up Upstream, idle time.Duration) (body io.Reader, release func()) {
	t := time.AfterFunc(idle, up.Interrupt)
	t.Stop() // armed by each read
	stopCtx := context.AfterFunc(ctx, up.Interrupt)
	return &idleReader{r: up, t: t, d: idle}, func() {
		stopCtx()
		t.Stop()
		up.Release()
	}
}

// drainAfterEnd reads what is left of an upstream stream whose answer
// has ended (its last event read and relayed): the chunked body's last
// chunk, which the relays that stop at the answer's end leave unread, so
// that closing the response returns the connection to the client's pool
// instead of closing it (every streamed answer cost a new upstream
// connection). The client has everything by then. At most drainMax bytes
// for at most drainWait: an upstream that keeps its body open past the
// answer loses its connection.
func drainAfterEnd(up Upstream) {
	t := time.AfterFunc(drainWait, up.Interrupt)
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(up, drainMax))
}

const (
	drainMax  = 64 << 10
	drainWait = 50 * time.Millisecond
)

// idleReader arms the idle deadline only while a read waits on the
// upstream: time spent writing to a slow client (the relay blocked on a
// full socket) is not upstream silence.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

// BeforeWait is ir's upstream's (WaitNotifier), false when it has none.
func (ir *idleReader) BeforeWait(f func() error) bool {
	wn, ok := ir.r.(WaitNotifier)
	return ok && wn.BeforeWait(f)
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.t.Reset(ir.d)
	n, err := ir.r.Read(p)
	ir.t.Stop()
	return n, err
}
