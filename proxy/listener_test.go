package proxy

import (
	"io"
	"net"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/sock"
)

// A connection holding a stream's end writes it with the next write once
// released with it, and at its close if no write came: nothing held is
// lost, whatever fasthttp does after the body stream's close.
func TestHeldWritesGoWithTheNextWriteOrAtClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		next   string // the write after the release ("": none, the connection closes)
		writes int
	}{
		{name: "with the next write", next: "\r\n", writes: 1},
		{name: "at close", next: "", writes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			got := make(chan string, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					got <- err.Error()
					return
				}
				b, _ := io.ReadAll(c)
				c.Close()
				got <- string(b)
			}()
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			counted := &writeCount{Conn: raw}
			c := &clientConn{Coarse: sock.Coarse{Conn: counted}}
			c.HoldNext()
			for _, p := range []string{"f7\r\ndata: [DONE]\n\n\r\n", "0\r\n"} {
				if n, err := c.Write([]byte(p)); n != len(p) || err != nil {
					t.Fatalf("held write: %d, %v", n, err)
				}
			}
			c.ReleaseWithNext()
			if counted.n != 0 {
				t.Fatalf("%d writes reached the socket while held, want none", counted.n)
			}
			if tc.next != "" {
				if n, err := c.Write([]byte(tc.next)); n != len(tc.next) || err != nil {
					t.Fatalf("the next write: %d, %v", n, err)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			want := "f7\r\ndata: [DONE]\n\n\r\n0\r\n" + tc.next
			if s := <-got; s != want {
				t.Fatalf("the client read %q, want %q", s, want)
			}
			if counted.n != tc.writes {
				t.Fatalf("%d writes reached the socket, want %d", counted.n, tc.writes)
			}
		})
	}
}

// writeCount is a connection that counts its writes.
type writeCount struct {
	net.Conn
	n int
}

func (c *writeCount) Write(p []byte) (int, error) {
	c.n++
	return c.Conn.Write(p)
}

// Shutdown closing every connection races no write of the connection's
// own goroutine: the tracker closes the socket, not the held writes
// (the race detector's check, as e2e's harness shutdown once showed).
func TestShutdownClosesBesideAWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(io.Discard, c)
		c.Close()
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := &clientConn{Coarse: sock.Coarse{Conn: raw}}
	var tr connTracker
	tr.track(c, fasthttp.StateNew)
	tr.track(c, fasthttp.StateActive)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for {
			c.HoldNext()
			c.Write([]byte("held"))
			c.ReleaseWithNext()
			if _, err := c.Write([]byte("\r\n")); err != nil {
				return // the tracker closed the socket
			}
		}
	}()
	tr.closeAll()
	<-wrote
	c.Close() // fasthttp's goroutine closes it after the error
}
