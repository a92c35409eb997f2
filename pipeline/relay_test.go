package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/streambody"
)

// fakeUpstream is an upstream answer: body, then (with hang set) a read
// that waits until Interrupt.
type fakeUpstream struct {
	body        *strings.Reader
	hang        bool
	once        sync.Once
	interrupted chan struct{}
	released    chan struct{}
	// log is what happened, in order (released, lock released,
	// cancelled), as the relay's goroutine did it.
	mu  sync.Mutex
	log []string
}

func newFakeUpstream(body string, hang bool) *fakeUpstream {
	return &fakeUpstream{body: strings.NewReader(body), hang: hang, interrupted: make(chan struct{}), released: make(chan struct{})}
}

func (u *fakeUpstream) Read(p []byte) (int, error) {
	if n, err := u.body.Read(p); err != io.EOF || !u.hang {
		return n, err
	}
	<-u.interrupted
	return 0, errors.New("interrupted")
}

func (u *fakeUpstream) Interrupt() { u.once.Do(func() { close(u.interrupted) }) }

func (u *fakeUpstream) Release() { u.note("released"); close(u.released) }

func (u *fakeUpstream) note(s string) {
	u.mu.Lock()
	u.log = append(u.log, s)
	u.mu.Unlock()
}

func (u *fakeUpstream) events() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.log, ",")
}

// server reads out as fasthttp's connection does, into got, and closes
// it with closeErr once it has read everything (a client that left:
// an error).
func server(out *streambody.Body, got *bytes.Buffer, closeErr error) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(got, out)
		_ = out.CloseWithError(closeErr)
	}()
	return done
}

// relayOnce runs Relay over up with work and returns what end got, once
// Relay has returned.
func relayOnce(t *testing.T, ctx context.Context, up *fakeUpstream, out *streambody.Body, idle time.Duration,
	work func(w *bufio.Writer, r io.Reader) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	owned := Owned{Cancel: func() { up.note("cancelled"); cancel() }, Release: func() { up.note("unlocked") }}
	var ended error
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		Relay(ctx, owned, out, up, idle, work, func(err error) { up.note("end"); ended = err })
	}()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not return")
	}
	return ended
}

func TestRelay(t *testing.T) {
	const events = "data: 1\n\ndata: 2\n\n"
	copyEvents := func(w *bufio.Writer, r io.Reader) error {
		buf := make([]byte, len(events))
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		_, err := w.Write(buf)
		return err
	}
	tests := []struct {
		name string
		// upstream is the answer's body: events, and what work leaves
		// unread (the chunked body's end, which the relay drains).
		upstream string
		hang     bool
		closeErr error
		work     func(w *bufio.Writer, r io.Reader) error
		// want: what end gets (nil, or an error wrapping wantErr); the
		// client's bytes; whether up was drained.
		wantErr     error
		wantOther   bool
		wantClient  string
		wantDrained bool
		wantLog     string
	}{
		{name: "relayed, waited for, drained", upstream: events + "tail", work: copyEvents,
			wantClient: events, wantDrained: true, wantLog: "end,released,unlocked,cancelled"},
		{name: "client gone", upstream: events + "tail", closeErr: errors.New("broken pipe"), work: copyEvents,
			wantErr: ErrClientGone, wantClient: events, wantLog: "end,released,unlocked,cancelled"},
		{name: "work's error", upstream: events + "tail", work: func(w *bufio.Writer, r io.Reader) error {
			return errors.New("upstream cut")
		}, wantOther: true, wantLog: "end,released,unlocked,cancelled"},
		{name: "idle upstream", upstream: "data: 1\n\n", hang: true, work: func(w *bufio.Writer, r io.Reader) error {
			_, err := io.Copy(w, r)
			return err
		}, wantOther: true, wantClient: "data: 1\n\n", wantLog: "cancelled,end,released,unlocked,cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newFakeUpstream(tt.upstream, tt.hang)
			out := streambody.New(1 << 10)
			var got bytes.Buffer
			served := server(out, &got, tt.closeErr)
			err := relayOnce(t, context.Background(), up, out, 20*time.Millisecond, tt.work)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("end got %v, want %v", err, tt.wantErr)
			case tt.wantOther && err == nil:
				t.Error("end got nil, want work's error")
			case tt.wantErr == nil && !tt.wantOther && err != nil:
				t.Errorf("end got %v, want nil", err)
			}
			select {
			case <-served:
			case <-time.After(10 * time.Second):
				t.Fatal("the body stream was not ended")
			}
			if got.String() != tt.wantClient {
				t.Errorf("the client got %q, want %q", got.String(), tt.wantClient)
			}
			if drained := up.body.Len() == 0; drained != tt.wantDrained && !tt.hang {
				t.Errorf("drained: got %v, want %v", drained, tt.wantDrained)
			}
			// end, then the answer, the lock and the deadline, in that
			// order (the idle timer's cancel before them all).
			if got := up.events(); got != tt.wantLog {
				t.Errorf("the relay's ends: got %s, want %s", got, tt.wantLog)
			}
		})
	}
}

// A client that takes nothing does not hold the exchange past its
// deadline: the deadline aborts the body stream.
func TestRelayDeadlineAbortsAStuckClient(t *testing.T) {
	up := newFakeUpstream(strings.Repeat("x", 8<<10), false)
	out := streambody.New(1 << 10) // nobody reads it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := relayOnce(t, ctx, up, out, time.Minute, func(w *bufio.Writer, r io.Reader) error {
		_, err := io.Copy(w, r)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("end got %v, want the deadline", err)
	}
	if _, rerr := out.Read(make([]byte, 1)); !errors.Is(rerr, context.DeadlineExceeded) {
		t.Errorf("the body stream's reader got %v, want the deadline's abort", rerr)
	}
}

// Bound interrupts a later round's read that waits past idle, and its
// release ends the answer.
func TestBound(t *testing.T) {
	up := newFakeUpstream("data: 1\n\n", true)
	body, release := Bound(context.Background(), up, 20*time.Millisecond)
	b, err := io.ReadAll(body)
	if string(b) != "data: 1\n\n" || err == nil {
		t.Errorf("got %q, %v; want the event, then the interrupt's error", b, err)
	}
	release()
	select {
	case <-up.released:
	default:
		t.Error("release did not release the answer")
	}
}
