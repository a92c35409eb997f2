package pipeline

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// The render stage writes the answer to the client: a whole answer to a
// Client, a stream's events to a Writer. Package proxy implements both
// over fasthttp; the stage knows nothing of HTTP.

var (
	// ErrClientGone is a write or flush failure: the client left
	// mid-stream.
	ErrClientGone = errors.New("proxy: client gone mid-stream")
	// ErrClientLeft is a client that closed its connection before its
	// answer was recorded: it would retry, and storing the answer it
	// never saw would leave the retry a duplicate turn.
	ErrClientLeft = errors.New("proxy: client left before the answer was recorded")
	// ErrErrorEventRelayed marks a stream that failed with the upstream's
	// own error event, which the client got: Recall adds no second one.
	ErrErrorEventRelayed = errors.New("proxy: the upstream's error event was relayed")
)

// Writer is where a stream's events go, each flushed once written (see
// WriteFlush).
type Writer interface {
	io.Writer
	Flush() error
}

// Client is where a whole answer goes.
type Client interface {
	// Relayed answers the upstream's body as it came, under the headers
	// the upstream sent.
	Relayed(body []byte)
	// Rendered answers a JSON body Recall rendered: the upstream's
	// Content-Encoding and Content-Length do not hold for it.
	Rendered(body []byte)
	// Gone reports whether the client has closed its connection.
	Gone() bool
}

// Exchange is what the render stage asks of the exchange whose answer it
// renders.
type Exchange interface {
	// Stamp gives the answer Recall's id and times, and its stored form
	// in the protocol the client receives it in.
	Stamp(a *wire.Answer) error
	// Commit records the turn with the answer a; the render calls it
	// before the client has the answer's end.
	Commit(a *wire.Answer) error
	// UpstreamDone notes that the upstream's answer was read to its end.
	UpstreamDone()
	// Left fails with ErrClientGone if a stream's client has closed its
	// connection (a stream's writes, buffered, do not tell in time).
	Left() error
	// Committing notes that a stream's answer is whole and its commit
	// begins: what the client has yet to get waits on the commit alone.
	Committing()
	// ErrorEvent is err as the client's protocol's error event: ren's
	// when it renders one (ren is nil when the upstream's events are
	// relayed as they came).
	ErrorEvent(ren wire.Renderer, err error) []byte
}

// EventRenderer is a Renderer that renders a stream of its own
// protocol's events from the events themselves rather than their deltas
// (the upstream's events with Recall's ids: see responses.Renderer.Event).
type EventRenderer interface {
	wire.Renderer
	// Reads reports whether it renders asm's stream from its events; the
	// pump then reads them as a relay does (wire.Relayer), without
	// deltas.
	Reads(asm wire.Assembler) bool
	// Event appends the client's events for the upstream's event raw,
	// as it came; flush is false when they may wait for the next ones
	// (then sent with them, or with End's).
	Event(dst, raw []byte) (out []byte, flush bool)
}

// WriteFlush writes b to w and flushes it; a failure is the client's
// (ErrClientGone).
func WriteFlush(w Writer, b []byte) error {
	if err := write(w, b); err != nil || len(b) == 0 {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", ErrClientGone, err)
	}
	return nil
}

// write writes b to w, unflushed; a failure is the client's
// (ErrClientGone).
func write(w Writer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("%w: %w", ErrClientGone, err)
	}
	return nil
}

// Stamp gives the answer Recall's id and times (Created: the request's
// when it named one, else start; Completed: now), and
// puts its stored form in the protocol the client received it in: the
// upstream's when the client speaks it, else the client's (the canonical
// answer encoded by its codec; the upstream's Settings, in its protocol,
// are dropped). What is stored, what the client is answered and what a
// stored response renders later are then the same items, and a client
// that resends its history resends what is stored, which the merge
// recognises. A provider's opaque pieces (signed thinking, encrypted
// reasoning) are then not kept: only a client of that provider's
// protocol could send them back.
func Stamp(a *wire.Answer, req *wire.Request, up, in wire.Protocol, start, now time.Time) error {
	a.Protocol = up
	if req.ResponseID != "" {
		a.ResponseID, a.Created = req.ResponseID, req.Created
	}
	if a.Created == 0 {
		a.Created = start.Unix()
	}
	a.Completed = now.Unix()
	if in != up {
		stored, err := wire.For(in).Encode(nil, []wire.Message{a.Message})
		if err != nil {
			return fmt.Errorf("%w: %w", apierr.UpstreamBadResponse, err)
		}
		a.Stored, a.Protocol, a.Settings = stored, in, nil
	}
	return nil
}

// Whole is the render stage of a non-streamed answer a, read from the
// upstream as raw: stamped, committed when record is set (not when the
// client already left: it would retry, ErrClientLeft), then answered as
// it came to a client of the upstream's protocol (same), else rendered
// by ingress for req.
func Whole(c Client, x Exchange, a *wire.Answer, raw []byte, ingress AnswerRenderer, req *wire.Request, same, record bool) error {
	if err := x.Stamp(a); err != nil {
		return err
	}
	if record {
		if err := CommitWhole(c, x, a); err != nil {
			return err
		}
	}
	if same {
		c.Relayed(raw)
	} else {
		c.Rendered(ingress.AppendAnswer(nil, req, a))
	}
	return nil
}

// AnswerRenderer renders a non-streamed answer in the client's protocol:
// the client's wire.Ingress, or a renderer that reuses what the commit
// rendered of it (responses.Renderer.AppendAnswer).
type AnswerRenderer interface {
	AppendAnswer(dst []byte, req *wire.Request, a *wire.Answer) []byte
}

// Stream is the render stage of a streamed answer, with the pump and the
// commit: the upstream's events read from r by asm (bounded by max bytes)
// and relayed to w as they came (same: ren is nil), the one that
// finishes the answer and every later one held until the commit; or
// rendered by ren in the client's protocol (from each event as it came
// when ren is an EventRenderer that reads asm's, else from its deltas),
// its closing events written once the turn is committed. A recorded turn (record) that cannot be
// committed never gets its closing events: the stream ends with an error
// event instead.
//
// The events written go to the client when the pump is about to read
// more of the upstream (flushingReader), not one by one: those that came
// in one read reach the client in one write, and those that came with
// the answer's end go with the end, after the commit.
func Stream(w Writer, r io.Reader, x Exchange, asm wire.Assembler, max int, ren wire.Renderer, same, record bool) error {
	hb := heldBuffers.Get().(*[]byte)
	held := (*hb)[:0]
	defer func() {
		if cap(held) <= maxHeldRoom {
			*hb = held[:0]
		}
		heldBuffers.Put(hb)
	}()
	var out []byte
	holding := false
	er, _ := ren.(EventRenderer)
	if er != nil && !er.Reads(asm) {
		er = nil
	}
	fr := &flushingReader{r: r, w: w}
	if wn, ok := r.(WaitNotifier); ok && wn.BeforeWait(fr.flush) {
		fr.onWait = true
		defer wn.BeforeWait(nil)
	}
	a, err := Pump(fr, asm, max, same || er != nil, func(raw []byte, deltas []wire.Delta, last bool) error {
		if er != nil {
			// What may wait goes out with the next event, in one write:
			// the client gets one chunk where the renderer had many.
			var flush bool
			if held, flush = er.Event(held, raw); !flush {
				return nil
			}
			err := fr.write(held)
			held = held[:0]
			return err
		}
		if !same {
			out = out[:0]
			for _, d := range deltas {
				out = ren.Delta(out, d)
			}
			return fr.write(out)
		}
		holding = holding || record && last
		for _, d := range deltas {
			holding = holding || record && d.Kind == wire.Finish
		}
		if holding {
			held = append(held, raw...)
			return nil
		}
		return fr.write(raw)
	})
	if fr.err != nil {
		err = fr.err
	}
	x.UpstreamDone()
	var ue *UpstreamEvent
	switch {
	case errors.As(err, &ue) && same && !holding:
		// The upstream's own error event reaches the client as it came.
		if werr := WriteFlush(w, ue.Raw); werr != nil {
			return werr
		}
		return fmt.Errorf("%w: %w", ErrErrorEventRelayed, err)
	case errors.Is(err, ErrClientGone):
		return err
	case err != nil:
		if er != nil { // the events before the error, numbered before it
			if werr := write(w, held); werr != nil {
				return fmt.Errorf("%w (%w)", err, werr)
			}
		}
		return EndStream(w, x, ren, err)
	}
	if err := x.Stamp(&a); err != nil {
		return EndStream(w, x, ren, err)
	}
	var c Committer
	if record {
		c = x
		if er != nil {
			c = waitingCommitter{c: x, w: w, held: held}
		}
	}
	return CommitStream(w, x, c, ren, &a, held)
}

// heldBuffers recycles Stream's buffer of the events it holds (those an
// EventRenderer rendered that wait for the next, and the stream's end),
// one a stream: a Responses stream's opening events alone take about
// 4 KiB. Nothing holds it past Stream: the client's writer copies what
// it is given.
var heldBuffers = sync.Pool{New: func() any { b := make([]byte, 0, heldRoom); return &b }}

const (
	heldRoom    = 8 << 10  // a new buffer's: the opening events and a Response's end
	maxHeldRoom = 64 << 10 // past this, a stream's buffer is not kept
)

// flushingReader is the upstream's stream r as the pump reads it: the
// events written to w since the last flush are flushed before a read
// that may wait on the upstream: before each read, or, of an upstream
// that says when it is to wait (WaitNotifier, onWait), just then. A
// client waits for no event the upstream has sent, and the events of
// what came at once (one read, or several of bytes already there: a
// stream of several chunks that came together) go out in one write.
type flushingReader struct {
	r       io.Reader
	w       Writer
	pending bool  // written since the last flush
	onWait  bool  // r flushes before it waits
	err     error // the flush's failure: the client's (ErrClientGone)
}

// write writes b to the client, flushed before the next read that may
// wait (or by whoever writes the stream's end).
func (f *flushingReader) write(b []byte) error {
	f.pending = f.pending || len(b) > 0
	return write(f.w, b)
}

// flush flushes what was written since the last flush.
func (f *flushingReader) flush() error {
	if f.pending {
		f.pending = false
		if err := f.w.Flush(); err != nil {
			f.err = fmt.Errorf("%w: %w", ErrClientGone, err)
		}
	}
	return f.err
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if !f.onWait {
		if err := f.flush(); err != nil {
			return 0, err
		}
	}
	return f.r.Read(p)
}

// waitingCommitter commits through c; when the commit fails it writes
// held, the events an EventRenderer rendered that waited for the end,
// so that they reach the client ahead of the error event, numbered
// before it.
type waitingCommitter struct {
	c    Committer
	w    Writer
	held []byte
}

func (wc waitingCommitter) Commit(a *wire.Answer) error {
	err := wc.c.Commit(a)
	if err != nil {
		if werr := write(wc.w, wc.held); werr != nil {
			return fmt.Errorf("%w (%w)", err, werr)
		}
	}
	return err
}

// Committer commits a turn whose answer is whole and stamped: an
// Exchange commits its own turn; the history tools' rounds commit the
// turn their rounds built.
type Committer interface {
	Commit(a *wire.Answer) error
}

// CommitWhole is the hold-until-commit rule of a whole answer a: the
// turn is committed through c before the client gets a, and not at all
// when the client already left (ErrClientLeft: it would retry, and the
// answer it never saw stored would leave the retry a duplicate turn).
func CommitWhole(cl Client, c Committer, a *wire.Answer) error {
	if cl.Gone() {
		return ErrClientLeft
	}
	return c.Commit(a)
}

// CommitStream is the hold-until-commit rule of a stream whose answer a
// is whole and stamped, for every stream alike (the plain relay's and
// the history tools' rounds'): the turn is committed through c (nil:
// nothing is recorded), and only then does the client get the stream's
// end: held, the events held back as they came when ren is nil, else
// held and ren's closing events for a. A client that left before the
// commit is not committed for (x.Left); a commit that fails ends the
// stream with an error event instead, and the end never goes out.
func CommitStream(w Writer, x Exchange, c Committer, ren wire.Renderer, a *wire.Answer, held []byte) error {
	if c != nil {
		if err := x.Left(); err != nil {
			return err
		}
		x.Committing()
		if err := c.Commit(a); err != nil {
			return EndStream(w, x, ren, err)
		}
	}
	// Unflushed: the relay flushes it as the body's last write (Relay).
	if ren == nil {
		return write(w, held)
	}
	return write(w, ren.End(held, a))
}

// EndStream ends a stream that failed with err with the client's
// protocol's error event; the closing events never go out.
func EndStream(w Writer, x Exchange, ren wire.Renderer, err error) error {
	if _, werr := w.Write(x.ErrorEvent(ren, err)); werr != nil {
		return fmt.Errorf("%w (%w: %w)", err, ErrClientGone, werr)
	}
	return err
}
