package proxy

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/rewrite"
)

// errClientGone is a write or flush failure: the client left mid-stream.
var errClientGone = errors.New("proxy: client gone mid-stream")

// relayStream relays an upstream event stream to the client as it arrives
// and, if record is set, rebuilds the answer from a parsed copy and commits
// it once every event was written to the client's connection, before the
// body's final chunk: a client that saw the end of the stream was
// answered by a committed turn, even if the process dies right after. It
// owns resp, cancel and the exchange's lock from here on: the relay
// goroutine touches nothing of rc, and releases all three.
func (s *Server) relayStream(ctx context.Context, cancel context.CancelFunc, rc *fasthttp.RequestCtx, x *exchange, resp *http.Response, record bool) {
	rc.Response.ImmediateHeaderFlush = true
	rc.Response.Header.Del("Content-Length")
	s.inflight.Add(1)
	s.busy.Add(1)
	// An unbuffered pipe rather than SetBodyStreamWriter, whose pipe
	// buffers several flushes: each write returns once fasthttp took the
	// bytes, and fasthttp takes the next only after writing and flushing
	// the previous ones to the connection, closing the pipe on a write
	// error.
	pr, pw := io.Pipe()
	rc.SetBodyStream(pr, -1)
	go func() {
		defer s.inflight.Done()
		defer s.busy.Add(-1)
		defer pw.Close()
		defer cancel()
		// A client that takes nothing must not hold the conversation past
		// the exchange's deadline: the deadline unblocks the pipe. (The idle
		// timer's cancel does not: the relay then ends the body cleanly.)
		defer context.AfterFunc(ctx, func() {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				pr.CloseWithError(ctx.Err())
			}
		})()
		defer resp.Body.Close()
		defer func() {
			if x.release != nil {
				x.release()
			}
		}()
		defer recoverStream(s.log)

		// A stream that sends nothing for StreamIdleTimeout is ended.
		idle := time.AfterFunc(s.cfg.StreamIdleTimeout, cancel)
		defer idle.Stop()
		upstream := &idleReader{r: resp.Body, t: idle, d: s.cfg.StreamIdleTimeout}

		w := bufio.NewWriter(pw)
		var asm rewrite.Assembler
		var err error
		switch enc := resp.Header.Get("Content-Encoding"); enc {
		case "", "identity":
			err = s.relayEvents(w, upstream, &asm)
		default:
			err = s.relayEncoded(w, upstream, enc, &asm)
		}
		upstreamDone := s.cfg.Now()
		if ferr := w.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("%w: %w", errClientGone, ferr)
		}
		if err == nil {
			// A barrier: an empty write returns once fasthttp has written
			// and flushed every event before it, or fails if it could not.
			if _, berr := pw.Write(nil); berr != nil {
				err = fmt.Errorf("%w: %w", errClientGone, berr)
			}
		}
		status := resp.StatusCode
		if err == nil && record {
			if !asm.Done() {
				err = errors.New("proxy: stream ended without [DONE]")
			} else if cerr := x.commit(context.Background(), asm.Reply()); cerr != nil {
				s.metrics.commitFailed(x.c.cfg.ID)
				err = fmt.Errorf("proxy: commit after stream: %w", cerr)
			} else {
				x.committed = true
			}
		}
		if err != nil {
			s.metrics.streamAborted(x.c.cfg.ID)
			if errors.Is(err, errClientGone) {
				status = 499
			}
		}
		x.done(status, upstreamDone, err)
	}()
}

// relayEvents relays an uncompressed stream event by event, flushing each,
// and feeds every event's data to asm. It returns nil only if the upstream
// ended the stream cleanly and every byte reached the client.
func (s *Server) relayEvents(w *bufio.Writer, r io.Reader, asm *rewrite.Assembler) error {
	er := rewrite.NewEventReader(r, s.cfg.MaxResponseBytes)
	var bad error
	for {
		ev, err := er.Next()
		if len(ev.Raw) > 0 {
			if _, werr := w.Write(ev.Raw); werr != nil {
				return fmt.Errorf("%w: %w", errClientGone, werr)
			}
			if werr := w.Flush(); werr != nil {
				return fmt.Errorf("%w: %w", errClientGone, werr)
			}
			if len(ev.Data) > 0 && bad == nil {
				bad = asm.Add(ev.Data)
			}
		}
		if err == io.EOF {
			return bad
		}
		if err != nil {
			return fmt.Errorf("proxy: upstream stream: %w", err)
		}
	}
}

// relayEncoded relays a compressed stream as sent, flushing each read, and
// decodes a copy in a goroutine to feed asm.
func (s *Server) relayEncoded(w *bufio.Writer, r io.Reader, enc string, asm *rewrite.Assembler) error {
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var parseErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer pr.Close()
		zr, err := decoder(enc, pr)
		if err != nil {
			parseErr = err
			io.Copy(io.Discard, pr)
			return
		}
		er := rewrite.NewEventReader(zr, s.cfg.MaxResponseBytes)
		for {
			ev, err := er.Next()
			if len(ev.Data) > 0 && parseErr == nil {
				parseErr = asm.Add(ev.Data)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parseErr = err
				io.Copy(io.Discard, pr)
				break
			}
		}
	}()
	_, err := relayRaw(w, io.TeeReader(r, pw))
	pw.CloseWithError(err)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return parseErr
}

// decoder returns a reader decoding enc.
func decoder(enc string, r io.Reader) (io.Reader, error) {
	switch enc {
	case "gzip", "x-gzip":
		return gzip.NewReader(r)
	case "deflate":
		return flate.NewReader(r), nil
	}
	return nil, fmt.Errorf("proxy: unsupported content encoding %q", enc)
}

// decode returns raw decoded per its content encoding, bounded by limit.
func decode(enc string, raw []byte, limit int) ([]byte, error) {
	if enc == "" || enc == "identity" {
		return raw, nil
	}
	zr, err := decoder(enc, bytesReader(raw))
	if err != nil {
		return nil, err
	}
	return readLimited(zr, limit)
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
