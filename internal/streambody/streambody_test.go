package streambody

import (
	"errors"
	"io"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned within a
// deadline (the behaviour under test is that it does not wait).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting after 5 s", what)
	}
}

// A relay's writes do not wait for fasthttp to take each one: they are
// buffered, and one read takes all of them (one chunk, one write to the
// connection), which an unbuffered pipe would not allow.
func TestStreamBodyWritesDoNotWaitForTheReader(t *testing.T) {
	b := New(1 << 10)
	events := []string{"data: 1\n\n", "data: 2\n\n", "data: 3\n\n"}
	within(t, "three writes without a reader", func() {
		for _, ev := range events {
			if _, err := b.Write([]byte(ev)); err != nil {
				t.Errorf("write: %v", err)
			}
		}
	})
	p := make([]byte, 4096)
	n, err := b.Read(p)
	if err != nil || string(p[:n]) != events[0]+events[1]+events[2] {
		t.Fatalf("one read got %q, %v; want all three events", p[:n], err)
	}
	b.End()
	if n, err := b.Read(p); n != 0 || err != io.EOF {
		t.Fatalf("read after End: %d, %v; want 0, EOF", n, err)
	}
}

// A read waits for the next write, and a read into a short buffer leaves
// the rest for the next.
func TestStreamBodyReadWaitsAndSplits(t *testing.T) {
	b := New(1 << 10)
	got := make(chan string, 1)
	go func() {
		p := make([]byte, 4)
		n, _ := b.Read(p)
		got <- string(p[:n])
	}()
	if _, err := b.Write([]byte("abcdefgh")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "abcd" {
		t.Fatalf("first read %q, want %q", s, "abcd")
	}
	p := make([]byte, 16)
	if n, err := b.Read(p); err != nil || string(p[:n]) != "efgh" {
		t.Fatalf("second read %q, %v; want %q", p[:n], err, "efgh")
	}
}

// Past max bytes waiting, a write waits for the reader: a client that
// takes nothing holds its relay back.
func TestStreamBodyWriteWaitsPastMax(t *testing.T) {
	b := New(8)
	if _, err := b.Write([]byte("12345678")); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := b.Write([]byte("9"))
		wrote <- err
	}()
	p := make([]byte, 64)
	n, err := b.Read(p)
	if err != nil || string(p[:n]) != "12345678" {
		t.Fatalf("read %q, %v; want the first 8 bytes only", p[:n], err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the waiting write: %v", err)
	}
	if n, err := b.Read(p); err != nil || string(p[:n]) != "9" {
		t.Fatalf("read %q, %v; want %q", p[:n], err, "9")
	}
}

// fasthttp's close with a write error (the client is gone) fails the
// relay's next write and is what Wait returns; a clean close after EOF
// is success.
func TestStreamBodyCloseWithError(t *testing.T) {
	gone := errors.New("broken pipe")
	b := New(1 << 10)
	if _, err := b.Write([]byte("data: 1\n\n")); err != nil {
		t.Fatal(err)
	}
	b.CloseWithError(gone)
	if _, err := b.Write([]byte("data: 2\n\n")); !errors.Is(err, gone) {
		t.Fatalf("write after the client left: %v, want %v", err, gone)
	}
	if err := b.Wait(); !errors.Is(err, gone) {
		t.Fatalf("Wait: %v, want %v", err, gone)
	}

	ok := New(1 << 10)
	ok.Write([]byte("x"))
	ok.End()
	p := make([]byte, 8)
	ok.Read(p)
	if _, err := ok.Read(p); err != io.EOF {
		t.Fatalf("read: %v, want EOF", err)
	}
	ok.CloseWithError(nil)
	if err := ok.Wait(); err != nil {
		t.Fatalf("Wait after every byte was taken: %v, want nil", err)
	}
}

// A response reset before its body was read to the end (fasthttp closes
// the stream with no error) is not a stream the client got whole.
func TestStreamBodyResetUnread(t *testing.T) {
	b := New(1 << 10)
	b.Write([]byte("data: 1\n\n"))
	b.End()
	b.CloseWithError(nil)
	if err := b.Wait(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait: %v, want %v", err, ErrClosed)
	}
	if _, err := b.Write([]byte("more")); err == nil {
		t.Fatal("a write after the stream was closed succeeded")
	}
}

// Abort (the exchange's deadline) ends a write waiting for room, a read
// waiting for data, and Wait.
func TestStreamBodyAbort(t *testing.T) {
	deadline := errors.New("deadline")
	b := New(1)
	b.Write([]byte("x"))
	wrote := make(chan error, 1)
	go func() {
		_, err := b.Write([]byte("y"))
		wrote <- err
	}()
	b.Abort(deadline)
	if err := <-wrote; !errors.Is(err, deadline) {
		t.Fatalf("waiting write: %v, want %v", err, deadline)
	}
	if _, err := b.Read(make([]byte, 8)); !errors.Is(err, deadline) {
		t.Fatalf("read: %v, want %v", err, deadline)
	}
	within(t, "Wait after Abort", func() {
		if err := b.Wait(); !errors.Is(err, deadline) {
			t.Errorf("Wait: %v, want %v", err, deadline)
		}
	})
}
