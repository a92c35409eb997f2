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
// The relay goroutine owns x and resp from here on (see relay).
func (s *Server) relayStream(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response) {
	rc.Response.Header.Del("Content-Length")
	s.relay(ctx, rc, x, resp, func(w *bufio.Writer, upstream io.Reader) error {
		r := &readErrs{r: upstream}
		_, err := relayRaw(w, r)
		x.rec.UpstreamDone = x.now()
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

// relay hands a streamed answer to a goroutine of its own, which runs
// the relay stage (pipeline.Relay) and ends the exchange (x.done) with
// the status its end deserves: work reads the upstream's body (bounded
// by the stream idle timeout) and writes to w, and returns nil only if
// it wrote everything it meant to. The response's body stream is a
// streambody.Body that fasthttp reads once the handler returns.
//
// The goroutine owns x and resp from here on, and takes x's deadline
// and lock (x.life.own), which it ends after x.done: the handler touches
// none of them after the go statement (it waits on the body stream
// alone, holdHeaders, then returns), and the goroutine touches nothing
// of rc.
func (s *Server) relay(ctx context.Context, rc *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response,
	work func(w *bufio.Writer, upstream io.Reader) error) {
	status := resp.StatusCode()
	res := x.life.own.Take()
	x.life.stream = newUpstreamStream(resp)
	s.inflight.Add(1)
	s.busy.Add(1)
	out := streambody.New(streamBodyMax)
	rc.SetBodyStream(out, -1)
	x.life.conn = rc.Conn()
	if c, ok := x.life.conn.(*clientConn); ok {
		out.Coalesce(c)
	}
	answered := make(chan struct{})
	x.life.answered = answered
	// The hand-over: x is the relay's from here.
	s.goroutines.Go(func() { // grown already: the relay goes deep
		defer s.inflight.Done()
		defer s.busy.Add(-1)
		defer recoverStream(s.log)
		pipeline.Relay(ctx, res, out, &x.life.stream, s.cfg.StreamIdleTimeout, work, func(err error) {
			st := status
			if err != nil && !x.life.committed {
				if x.hop == "" { // the replica that served it counts it
					s.metrics.StreamAborted(x.c.cfg.ID)
				}
				st = abortStatus(err, ctx.Err())
			}
			x.done(st, err)
		})
		x.releasePlan()
	})
	holdHeaders(rc, out, answered, s.cfg.headerTimer(s.cfg.StreamHeaderHold))
}

var (
	_ pipeline.Body         = (*streambody.Body)(nil)
	_ streambody.Coalescer  = (*clientConn)(nil)
	_ pipeline.Upstream     = (*upstreamStream)(nil)
	_ pipeline.WaitNotifier = (*upstreamStream)(nil)
)

// upstreamStream is an upstream's streamed answer as a relay reads it
// (pipeline.Upstream).
type upstreamStream struct {
	resp *fasthttp.Response
	body io.Reader
	// stream is resp's body stream, taken before the relay starts:
	// Interrupt reads it from other goroutines, and releasing resp
	// clears resp's field.
	stream io.Reader
}

func newUpstreamStream(resp *fasthttp.Response) upstreamStream {
	return upstreamStream{resp: resp, body: uplink.Body(resp), stream: resp.BodyStream()}
}

func (u *upstreamStream) Read(p []byte) (int, error) { return u.body.Read(p) }

// BeforeWait is the body's (pipeline.WaitNotifier), false when it has
// none.
func (u *upstreamStream) BeforeWait(f func() error) bool {
	wn, ok := u.body.(pipeline.WaitNotifier)
	return ok && wn.BeforeWait(f)
}

// Interrupt ends a read waiting on the upstream (uplink.Interrupt).
func (u *upstreamStream) Interrupt() { uplink.Interrupt(u.stream) }

// Release ends the answer (uplink.Release).
func (u *upstreamStream) Release() { uplink.Release(u.resp) }

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

// holdHeaders lets a stream's response headers wait for its first bytes
// until held fires, so that fasthttp writes them to the connection
// together: one write and one wake-up of the client instead of two (a
// stream the upstream sent at once is one write in all, headers, events
// and end; one sent over time, a write for each read of it the relay
// made, the last with the end). Past held they go alone
// (ImmediateHeaderFlush), so that a client whose upstream is slow to
// begin sees the answer begin; unless the answer is whole already and
// its commit begun (answered): what the client gets next then waits on
// the commit alone, and the headers go with it. The handler waits here,
// not the relay: fasthttp writes the headers when the handler returns.
func holdHeaders(rc *fasthttp.RequestCtx, out *streambody.Body, answered <-chan struct{}, held headerHold) {
	defer held.stop()
	select {
	case <-out.Started():
	case <-held.c:
		select {
		case <-answered:
			<-out.Started() // the relay ends the body whatever the commit's end
		default:
			rc.Response.ImmediateHeaderFlush = true
		}
	}
}

// headerHold is the timer of holdHeaders: c fires once the hold is
// over; stop releases it.
type headerHold struct {
	c    <-chan time.Time
	stop func() bool
}

// headerTimer starts the hold of a stream's headers, for d: a timer, or
// the test's (Config.holdTimer).
func (c *Config) headerTimer(d time.Duration) headerHold {
	if c.holdTimer != nil {
		return headerHold{c: c.holdTimer(d), stop: func() bool { return true }}
	}
	t := time.NewTimer(d)
	return headerHold{c: t.C, stop: t.Stop}
}

// leftBeforeCommit fails with pipeline.ErrClientGone if the client of a streamed
// exchange has closed its connection: a client that left would retry, and
// storing the answer it never saw would leave the retry a duplicate turn.
// The relay's writes do not tell in time: they are buffered (streambody.Body),
// and fasthttp may not have tried the connection since the client left.
func (x *exchange) leftBeforeCommit() error {
	if x.life.conn != nil && clientGone(x.life.conn) {
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

// recoverStream keeps a panic in a stream writer from taking the process
// down: the stream ends, nothing is committed, and the panic is logged.
func recoverStream(log *slog.Logger) {
	if v := recover(); v != nil {
		log.Error("stream writer panic", "panic", fmt.Sprint(v))
	}
}
