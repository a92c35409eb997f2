package streambody

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// coalescer records what a Body asked of its connection.
type coalescer struct {
	holds, withNext, releases int
	err                       error // what Release returns
}

func (c *coalescer) HoldNext()        { c.holds++ }
func (c *coalescer) ReleaseWithNext() { c.withNext++ }
func (c *coalescer) Release() error   { c.releases++; return c.err }

// The read that takes a stream's last bytes, the writer's side ended,
// asks the connection to hold them for the last chunk and the end of the
// body that follow; no earlier read does. A stream closed once read to
// its end has what the connection holds go with fasthttp's next write
// (the end of the body); any other close writes it at once, and a
// release that fails is what Wait returns.
func TestCoalesceHoldsTheLastBytesForTheEndOfTheBody(t *testing.T) {
	tests := []struct {
		name       string
		readToEnd  bool  // the stream is read to io.EOF before the close
		closeErr   error // what fasthttp's write ended with
		releaseErr error
		want       error
		withNext   int
		releases   int
	}{
		{name: "read to its end", readToEnd: true, withNext: 1},
		{name: "the write failed", readToEnd: true, closeErr: io.ErrClosedPipe, want: io.ErrClosedPipe, releases: 1},
		{name: "reset before its end", want: ErrClosed, releases: 1},
		{name: "reset, the release fails", releaseErr: io.ErrShortWrite, want: io.ErrShortWrite, releases: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &coalescer{err: tt.releaseErr}
			b := New(1 << 10)
			b.Coalesce(c)
			p := make([]byte, 64)
			if _, err := b.Write([]byte("data: 1\n\n")); err != nil {
				t.Fatal(err)
			}
			if n, err := b.Read(p); n == 0 || err != nil || c.holds != 0 {
				t.Fatalf("a read before the end: %d, %v, %d holds; want bytes and no hold", n, err, c.holds)
			}
			if _, err := b.Write([]byte("data: 2\n\ndata: [DONE]\n\n")); err != nil {
				t.Fatal(err)
			}
			b.End()
			if n, err := b.Read(p[:4]); n != 4 || err != nil || c.holds != 0 {
				t.Fatalf("a read that leaves bytes: %d, %v, %d holds; want 4 and no hold", n, err, c.holds)
			}
			if n, err := b.Read(p); n == 0 || err != nil || c.holds != 1 {
				t.Fatalf("the last read: %d, %v, %d holds; want bytes and one hold", n, err, c.holds)
			}
			if tt.readToEnd {
				if n, err := b.Read(p); n != 0 || err != io.EOF {
					t.Fatalf("the read after: %d, %v; want io.EOF", n, err)
				}
			}
			if c.releases != 0 || c.withNext != 0 {
				t.Fatalf("got %d releases before the stream closed, want none", c.releases+c.withNext)
			}
			b.CloseWithError(tt.closeErr)
			if c.withNext != tt.withNext || c.releases != tt.releases {
				t.Fatalf("closed: %d releases with the next write, %d at once; want %d, %d", c.withNext, c.releases, tt.withNext, tt.releases)
			}
			if err := b.Wait(); !errors.Is(err, tt.want) {
				t.Fatalf("Wait: got %v, want %v", err, tt.want)
			}
		})
	}
}

// A stream whose last bytes were read before the writer's side ended
// (fasthttp's goroutine ran in between) has the read that returns
// io.EOF ask for the hold: the last chunk goes with the end of the body.
func TestCoalesceHoldsTheLastChunkAfterALateEnd(t *testing.T) {
	c := &coalescer{}
	b := New(1 << 10)
	b.Coalesce(c)
	p := make([]byte, 64)
	if _, err := b.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Read(p); n == 0 || err != nil || c.holds != 0 {
		t.Fatalf("the read before the end: %d, %v, %d holds; want bytes and no hold", n, err, c.holds)
	}
	b.End()
	if n, err := b.Read(p); n != 0 || err != io.EOF || c.holds != 1 {
		t.Fatalf("the read at the end: %d, %v, %d holds; want io.EOF and one hold", n, err, c.holds)
	}
	b.CloseWithError(nil)
	if c.withNext != 1 || c.releases != 0 {
		t.Fatalf("closed: %d releases with the next write, %d at once; want 1, 0", c.withNext, c.releases)
	}
}

// batchWriter records each write WriteTo makes, with the holds its
// connection was asked for by then, hands it to the test and returns
// when the test says so.
type batchWriter struct {
	c      *coalescer
	writes chan batch
	next   chan struct{}
}

type batch struct {
	p     string
	holds int
}

func (w *batchWriter) Write(p []byte) (int, error) {
	w.writes <- batch{string(p), w.c.holds}
	<-w.next
	return len(p), nil
}

// WriteTo (fasthttp's way to read a Body, which makes each write one
// chunk) writes everything written since its last write in one, however
// large (Read's reader holds 4 KiB), and asks the connection to hold the
// last bytes, written after the writer's side ended, for the end of the
// body.
func TestWriteToWritesEachBatchAtOnce(t *testing.T) {
	c := &coalescer{}
	b := New(64 << 10)
	b.Coalesce(c)
	first := strings.Repeat("data: 0123456789abcdef\n\n", 400) // 10 KB
	if _, err := b.Write([]byte(first[:6000])); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte(first[6000:])); err != nil {
		t.Fatal(err)
	}
	w := &batchWriter{c: c, writes: make(chan batch), next: make(chan struct{})}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := b.WriteTo(w)
		done <- result{n, err}
	}()
	if got := <-w.writes; got.p != first || got.holds != 0 {
		t.Fatalf("first write: %d bytes, %d holds; want the %d written before it, no hold", len(got.p), got.holds, len(first))
	}
	// The next batch, whole before WriteTo takes it (its first write
	// returns after).
	if _, err := b.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	b.End()
	w.next <- struct{}{}
	got := <-w.writes
	w.next <- struct{}{}
	if got.p != "data: [DONE]\n\n" || got.holds != 1 {
		t.Fatalf("last write: %q, %d holds; want the last bytes, held", got.p, got.holds)
	}
	if r := <-done; r.n != int64(len(first)+len("data: [DONE]\n\n")) || r.err != nil {
		t.Fatalf("WriteTo: %d, %v; want every byte and no error", r.n, r.err)
	}
	b.CloseWithError(nil)
	if c.withNext != 1 || c.releases != 0 {
		t.Fatalf("closed: %d releases with the next write, %d at once; want 1, 0", c.withNext, c.releases)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// The write Last announces ends the writer's side with its bytes: the
// read that takes them, though it comes before any End, asks the
// connection to hold them for the end of the body. Without Last a reader
// woken by the last write, before End, sent them in a write of their own.
func TestLastWriteEndsTheStream(t *testing.T) {
	c := &coalescer{}
	b := New(1 << 10)
	b.Coalesce(c)
	p := make([]byte, 64)
	if _, err := b.Write([]byte("data: 1\n\n")); err != nil {
		t.Fatal(err)
	}
	b.Last()
	if _, err := b.Write([]byte("data: [DONE]\n\n")); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Read(p); n != len("data: 1\n\ndata: [DONE]\n\n") || err != nil || c.holds != 1 {
		t.Fatalf("the read of the last write: %d, %v, %d holds; want every byte and one hold", n, err, c.holds)
	}
	if n, err := b.Read(p); n != 0 || err != io.EOF {
		t.Fatalf("the read after: %d, %v; want io.EOF", n, err)
	}
}
