package streambody

import (
	"errors"
	"io"
	"testing"
)

// coalescer records what a Body asked of its connection.
type coalescer struct {
	holds, releases int
	err             error // what Release returns
}

func (c *coalescer) HoldNext()      { c.holds++ }
func (c *coalescer) Release() error { c.releases++; return c.err }

// The read that takes a stream's last bytes, the writer's side ended,
// asks the connection to hold them for the last chunk that follows; no
// earlier read does, nor the read that returns io.EOF. Closing the
// stream releases what the connection holds, and a release that fails
// is what Wait returns.
func TestCoalesceHoldsTheLastBytesForTheLastChunk(t *testing.T) {
	tests := []struct {
		name       string
		releaseErr error
		want       error
	}{
		{name: "released", want: nil},
		{name: "the release fails", releaseErr: io.ErrClosedPipe, want: io.ErrClosedPipe},
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
			if n, err := b.Read(p); n != 0 || err != io.EOF || c.holds != 1 {
				t.Fatalf("the read after: %d, %v, %d holds; want io.EOF and still one hold", n, err, c.holds)
			}
			if c.releases != 0 {
				t.Fatalf("got %d releases before the stream closed, want none", c.releases)
			}
			b.CloseWithError(nil)
			if c.releases != 1 {
				t.Fatalf("got %d releases once closed, want 1", c.releases)
			}
			if err := b.Wait(); !errors.Is(err, tt.want) {
				t.Fatalf("Wait: got %v, want %v", err, tt.want)
			}
		})
	}
}
