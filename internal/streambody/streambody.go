// Package streambody carries a streamed answer from the goroutine that
// relays it to fasthttp, which reads it as the response's body stream
// (fasthttp.RequestCtx.SetBodyStream) and writes each read as one chunk
// to the connection.
package streambody

import (
	"errors"
	"io"
	"sync"
)

// Body is the body stream of one streamed response: the relay writes it,
// fasthttp reads and closes it.
//
// It replaces an unbuffered io.Pipe, with which every flush of every
// event waited until fasthttp's connection goroutine had taken it: on the
// proxy's one core each such wait queued behind every other runnable
// goroutine, four or five times a stream. Here a write only appends and
// wakes the reader: the relay goes on to its next event (or its commit)
// and the reader takes everything written meanwhile in one read. A write
// waits only while max bytes or more wait to be taken (a client that reads
// nothing holds back its relay, as before), and the relay waits once, at
// the end, for fasthttp to have written the last byte (Wait).
type Body struct {
	mu      sync.Mutex
	cond    sync.Cond     // on mu: every change below
	buf     []byte        // written, not yet read
	spare   []byte        // the buffer the reader last drained, reused
	max     int           // bytes buffered at which Write waits
	ended   bool          // the writer is done: EOF once buf is drained
	last    bool          // the next write is the writer's last (Last)
	eof     bool          // the reader got io.EOF: it took every byte
	err     error         // the reader's side ended: reads and writes fail with it
	closed  bool          // fasthttp closed the stream (CloseWithError)
	aborted bool          // Abort ended it
	result  error         // what fasthttp's write ended with (nil: all written)
	pooled  [2]*[]byte    // the pool's holders of buf and spare, given back by release
	started chan struct{} // closed at the first write, or at the end of the writer's side
	conn    Coalescer     // the connection, asked to hold the stream's last chunk (Coalesce)
}

// ErrClosed is a write after fasthttp closed the body stream without an
// error, and what Wait returns for a response reset before its body was
// read to the end.
var ErrClosed = errors.New("streambody: response stream closed")

// streamBufs recycles Body buffers: a stream's events are
// appended while fasthttp's goroutine waits for the core, and a fresh
// buffer would grow by doubling every time.
var streamBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// New returns a Body whose writes wait while max bytes or more wait to be
// read.
func New(max int) *Body {
	b := &Body{max: max, pooled: [2]*[]byte{streamBufs.Get().(*[]byte), streamBufs.Get().(*[]byte)}, started: make(chan struct{})}
	b.buf, b.spare = *b.pooled[0], *b.pooled[1]
	b.cond.L = &b.mu
	return b
}

// release returns b's buffers to the pool: nothing reads or writes them
// once fasthttp has closed the stream.
func (b *Body) release() {
	for i, p := range [2][]byte{b.buf, b.spare} {
		if cap(p) <= 2*b.max {
			*b.pooled[i] = p[:0]
			streamBufs.Put(b.pooled[i])
		}
	}
	b.buf, b.spare, b.pooled = nil, nil, [2]*[]byte{}
}

// Write appends p for the reader. It fails once the reader's side has
// ended (the client is gone, or the stream was aborted).
func (b *Body) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.err == nil && len(b.buf) >= b.max && len(p) > 0 {
		b.cond.Wait()
	}
	if b.err != nil {
		return 0, b.err
	}
	b.buf = append(b.buf, p...)
	if len(p) > 0 {
		b.start()
	}
	b.ended = b.ended || b.last
	b.cond.Broadcast()
	return len(p), nil
}

// Last says the next write is the writer's last: it ends the writer's
// side (End) with its bytes, in one step, so that the reader never takes
// them before the end is known. Then the read that takes them asks the
// connection to hold them for the end of the body (Coalesce): with End
// after the write, a reader woken by the write in between sent them in a
// write of their own, and the end in another. End still ends a writer
// whose last write did not come.
func (b *Body) Last() {
	b.mu.Lock()
	b.last = true
	b.mu.Unlock()
}

// start closes started once (under mu): the first bytes are there, or
// there will be none.
func (b *Body) start() {
	select {
	case <-b.started:
	default:
		close(b.started)
	}
}

// Started is closed once the first bytes are written, or the writer's
// side has ended without any.
func (b *Body) Started() <-chan struct{} { return b.started }

// End ends the writer's side: the reader gets io.EOF once it has taken
// everything written. (Not Close: fasthttp calls an io.Closer's Close
// when it is done with the stream.)
func (b *Body) End() {
	b.mu.Lock()
	b.ended = true
	b.start()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Abort ends both sides with err: the reader's next read fails with it
// (fasthttp then drops the connection), so does every later write, and
// Wait returns it.
func (b *Body) Abort(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.aborted = true
	b.start()
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Read takes everything written so far (as much as p holds), waiting
// until there is something or the writer is done.
func (b *Body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.wait(); err != nil {
		return 0, err
	}
	n := copy(p, b.buf)
	if n == len(b.buf) {
		b.buf, b.spare = b.spare[:0], b.buf[:0]
		b.took()
	} else {
		b.buf = b.buf[:copy(b.buf, b.buf[n:])]
	}
	b.cond.Broadcast()
	return n, nil
}

// WriteTo writes what is written to b to w as it comes, until the
// writer's side ends: what Read takes, each batch in one write, where
// Read's are as large as the reader's buffer (fasthttp's is 4 KiB: a
// stream written at once went out in several chunks and writes). Each
// write is of b's own buffer, which the writer does not touch meanwhile.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		chunk, err := b.take()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := w.Write(chunk)
		total += int64(n)
		b.mu.Lock()
		b.spare = chunk[:0]
		b.mu.Unlock()
		if err != nil {
			return total, err
		}
	}
}

// SupportsBodyWriteTo lets fasthttp read b with WriteTo
// (fasthttp.BodyWriterTo): its writes are Read's bytes, batched.
func (b *Body) SupportsBodyWriteTo() bool { return true }

// take waits as Read does and takes everything written: the buffer
// itself, which WriteTo gives back as the spare once written.
func (b *Body) take() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.wait(); err != nil {
		return nil, err
	}
	chunk := b.buf
	b.buf, b.spare = b.spare[:0], nil
	b.took()
	b.cond.Broadcast()
	return chunk, nil
}

// wait waits (under mu) until there are bytes to take, or none will
// come: the reader's error, or io.EOF once the writer is done and every
// byte taken.
func (b *Body) wait() error {
	for {
		switch {
		case b.err != nil:
			return b.err
		case len(b.buf) > 0:
			return nil
		case b.ended:
			b.eof = true
			if b.conn != nil {
				// fasthttp writes the last chunk now: held for the
				// end of the body (when the last bytes were not, as
				// when this read came after the writer's end).
				b.conn.HoldNext()
			}
			return io.EOF
		}
		b.cond.Wait()
	}
}

// took is called (under mu) when every byte written is taken: after the
// writer's end, those are the last ones.
func (b *Body) took() {
	if b.ended && b.conn != nil {
		// The last bytes: fasthttp writes them as a chunk, then, at
		// the next read (io.EOF), the last chunk.
		b.conn.HoldNext()
	}
}

// CloseWithError is fasthttp's: it closes the body stream once it has
// written the response, with the write's error (nil: every byte went to
// the connection), or when the response is reset before that (nil too:
// then the stream did not reach its end, and Wait says so). Writes fail
// from then on.
func (b *Body) CloseWithError(err error) error {
	if b.conn != nil {
		// fasthttp's goroutine, the connection's writer, is the one
		// that reads b: eof is its own.
		b.mu.Lock()
		whole := b.eof && !b.closed
		b.mu.Unlock()
		if err == nil && whole {
			// Every byte went to the connection, and fasthttp ends
			// the response with a write still to come: the end of
			// its chunked body, which it flushes once this returns.
			// What the connection holds goes with it.
			b.conn.ReleaseWithNext()
		} else if rerr := b.conn.Release(); err == nil {
			// What it holds goes now, whatever fasthttp did after
			// the last read.
			err = rerr
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	if err == nil && !b.eof {
		err = ErrClosed
	}
	b.closed, b.result = true, err
	if b.err == nil {
		b.err = ErrClosed
		if err != nil {
			b.err = err
		}
	}
	b.release()
	b.cond.Broadcast()
	return nil
}

// Wait waits until fasthttp has closed the stream and returns what its
// write ended with (nil when every byte went to the connection, which
// may hold the last of them for the end of the body: Coalesce), or
// until the stream is aborted, and returns the abort's error.
func (b *Body) Wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.closed && !b.aborted {
		b.cond.Wait()
	}
	if b.closed {
		return b.result
	}
	return b.err
}

// A Coalescer is the connection fasthttp writes a Body's stream to, when
// it can hold writes and send them with a later one. fasthttp flushes
// each chunk it reads from a Body on its own, the stream's last bytes,
// the last chunk ("0\r\n") and the empty trailer that ends the body
// ("\r\n", flushed after the stream is closed) included: three writes,
// and three wake-ups of the client, where one does.
type Coalescer interface {
	// HoldNext holds the connection's writes from the next one on,
	// until a release.
	HoldNext()
	// ReleaseWithNext ends the hold: what is held goes with the
	// connection's next write, in one.
	ReleaseWithNext()
	// Release ends the hold and writes what is held, if anything.
	Release() error
}

// Coalesce makes the read that takes the stream's last bytes (the
// writer's side has ended) ask c to hold them, with the last chunk
// fasthttp writes next, until it closes the stream: a stream that
// reached its end without an error has them go with the end of the
// body, which fasthttp writes right after (ReleaseWithNext); any other
// close writes them at once (Release). c is called on fasthttp's
// goroutine, the one that reads b and writes to c. Call Coalesce before
// fasthttp reads b.
func (b *Body) Coalesce(c Coalescer) { b.conn = c }
