package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/streambody"
	"github.com/recallproxy/recall/pipeline"
	"github.com/recallproxy/recall/uplink"
)

// relayStream relays an unrecorded upstream event stream to the client
// as it arrives, byte for byte (the recorded ones go through relaySeam).
//
// It owns resp and res (the exchange's deadline and lock) from here on:
// the relay goroutine touches nothing of rc, and ends both.
func (s *Server) relayStream(ctx context.Context, res pipeline.Owned, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response) {
	rc.Response.Header.Del("Content-Length")
	s.relay(ctx, res, rc, x, resp, func(w *bufio.Writer, upstream io.Reader) error {
		r := &readErrs{r: upstream}
		_, err := relayRaw(w, r)
		x.facts.UpstreamDone = x.now()
		if err != nil && r.err != nil {
			return fmt.Errorf("%w: %w", apierr.UpstreamStreamCut, err)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", pipeline.ErrClientGone, err)
		}
		return nil
	})
}

// streamBodyMax is how many bytes of a stream may wait for fasthttp to
// take them before the relay waits for the client.
const streamBodyMax = 64 << 10

// relay runs a streamed answer's relay in a goroutine of its own, which
// owns resp and res (the exchange's deadline and lock) from here on and
// touches nothing of rc: work reads the upstream's body (bounded by the
// stream idle timeout) and writes to w, and returns nil only if it wrote
// everything it meant to. relay flushes w, waits until fasthttp has
// written every byte to the connection (see streambody.Body), and ends the
// exchange (x.done) with the status its end deserves.
func (s *Server) relay(ctx context.Context, res pipeline.Owned, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response,
	work func(w *bufio.Writer, upstream io.Reader) error) {
	status := resp.StatusCode()
	body := uplink.Body(resp)
	stream := resp.BodyStream() // interrupted from other goroutines: closeResponse clears the field
	s.inflight.Add(1)
	s.busy.Add(1)
	out := streambody.New(streamBodyMax)
	rc.SetBodyStream(out, -1)
	x.conn = rc.Conn()
	go func() {
		defer s.inflight.Done()
		defer s.busy.Add(-1)
		defer out.End()
		defer res.End() // after the commit: the lock, then the deadline
		// A client that takes nothing must not hold the conversation past
		// the exchange's deadline: the deadline ends the body stream.
		// (The idle timer's cancel does not: the relay then ends the body
		// cleanly.) Either ends a read waiting on the upstream.
		defer context.AfterFunc(ctx, func() {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				out.Abort(ctx.Err())
			}
			uplink.Interrupt(stream)
		})()
		defer uplink.Release(resp)
		defer recoverStream(s.log)

		// A stream that sends nothing for StreamIdleTimeout is ended.
		idle := time.AfterFunc(s.cfg.StreamIdleTimeout, res.Cancel)
		defer idle.Stop()
		w := bufio.NewWriter(out)
		err := work(w, &idleReader{r: body, t: idle, d: s.cfg.StreamIdleTimeout})
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("%w: %w", pipeline.ErrClientGone, ferr)
		}
		if err == nil {
			// Every event is written: wait until fasthttp has written
			// them to the connection, or could not.
			out.End()
			if werr := out.Wait(); werr != nil {
				err = fmt.Errorf("%w: %w", pipeline.ErrClientGone, werr)
			}
		}
		if err == nil {
			drainAfterEnd(body, stream)
		}
		if err != nil && !x.committed {
			s.metrics.StreamAborted(x.c.cfg.ID)
			status = abortStatus(err, ctx.Err())
		}
		x.done(status, err)
	}()
	holdHeaders(rc, out, s.cfg.StreamHeaderHold)
}

// abortStatus is the status a relayed exchange that err ended before its
// commit is recorded with (the client already holds the upstream's):
// 499 for a client that left, the commit's failure as the client was
// told it, a timeout for a deadline (err's, or the exchange's: ctxErr),
// else err's kind (classify).
func abortStatus(err, ctxErr error) int {
	switch {
	case errors.Is(err, pipeline.ErrClientGone):
		return 499
	case errors.Is(err, apierr.CommitFailed):
		// What the client was told: a commit that timed out is
		// history_write_failed, though it wraps a deadline.
		return apierr.CommitFailed.Status
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctxErr, context.DeadlineExceeded):
		return apierr.UpstreamTimeout.Status
	default:
		return classify(err).Status
	}
}

// drainAfterEnd reads what is left of an upstream stream whose answer
// has ended (its last event read and relayed): the chunked body's last
// chunk, which the relays that stop at the answer's end leave unread, so
// that closing the response returns the connection to the client's pool
// instead of closing it (every streamed answer cost a new upstream
// connection). The client has everything by then. At most drainMax bytes
// for at most drainWait: an upstream that keeps its body open past the
// answer loses its connection, as before.
func drainAfterEnd(body io.Reader, stream io.Reader) {
	t := time.AfterFunc(drainWait, func() { uplink.Interrupt(stream) })
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainMax))
}

const (
	drainMax  = 64 << 10
	drainWait = 50 * time.Millisecond
)

// holdHeaders lets a stream's response headers wait for its first bytes
// for up to hold, so that fasthttp writes them to the connection
// together: one write and one wake-up of the client instead of two (a
// stream is three or four writes in all: the headers, the events, the
// events held for the commit, the last chunk). Past hold they go alone
// (ImmediateHeaderFlush), so that a client whose upstream is slow to
// begin sees the answer begin. The handler waits here, not the relay:
// fasthttp writes the headers when the handler returns.
func holdHeaders(rc *fasthttp.RequestCtx, out *streambody.Body, hold time.Duration) {
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-out.Started():
	case <-t.C:
		rc.Response.ImmediateHeaderFlush = true
	}
}

// leftBeforeCommit fails with pipeline.ErrClientGone if the client of a streamed
// exchange has closed its connection: a client that left would retry, and
// storing the answer it never saw would leave the retry a duplicate turn.
// The relay's writes do not tell in time: they are buffered (streambody.Body),
// and fasthttp may not have tried the connection since the client left.
func (x *exchange) leftBeforeCommit() error {
	if x.conn != nil && clientGone(x.conn) {
		return fmt.Errorf("%w: the connection closed before the commit", pipeline.ErrClientGone)
	}
	return nil
}

// errorEvent is e as an SSE data event, the way OpenAI reports an error
// in a stream.
func errorEvent(e *apierr.Error) []byte {
	b := make([]byte, 0, 256)
	b = append(b, "data: "...)
	b = append(b, errorBody(e)...)
	return append(b, "\n\n"...)
}

// readErrs remembers a read error other than io.EOF, so that a relay can
// tell an upstream that failed from a client that did.
type readErrs struct {
	r   io.Reader
	err error
}

func (r *readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// idleReader arms the idle deadline only while a read waits on the
// upstream: time spent writing to a slow client (the relay blocked on a
// full socket) is not upstream silence.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.t.Reset(ir.d)
	n, err := ir.r.Read(p)
	ir.t.Stop()
	return n, err
}

// recoverStream keeps a panic in a stream writer from taking the process
// down: the stream ends, nothing is committed, and the panic is logged.
func recoverStream(log *slog.Logger) {
	if v := recover(); v != nil {
		log.Error("stream writer panic", "panic", fmt.Sprint(v))
	}
}
