package uplink

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestBeforeWaitRunsBeforeAReadOfTheConnection: a streamed body's hook
// (BeforeWait) runs before a read that goes to the connection, where it
// may wait on the upstream, and not before reads of what came already:
// the first two chunks came with the head, the last only once the hook
// ran. An error from the hook is the read's, and nothing is read.
func TestBeforeWaitRunsBeforeAReadOfTheConnection(t *testing.T) {
	const one, two, three = "data: 1\n\n", "data: 2\n\n", "data: 3\n\n"
	chunk := func(s string) string { return string(rune('0'+len(s))) + "\r\n" + s + "\r\n" }
	for _, failing := range []bool{false, true} {
		name := "the hook lets the read go"
		if failing {
			name = "the hook fails"
		}
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			rest := make(chan struct{})
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+chunk(one)+chunk(two))
				select {
				case <-rest:
					io.WriteString(c, chunk(three)+"0\r\n\r\n")
				case <-time.After(10 * time.Second):
				}
				io.Copy(io.Discard, c)
			}()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			req.Header.SetMethod("POST")
			req.SetRequestURI("http://" + ln.Addr().String() + "/v1/chat/completions")
			req.SetBodyString(`{"stream":true}`)
			if err := Do(DefaultClient(), req, resp, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			defer Release(resp)
			body := Body(resp)
			var got string
			var at []string // what was read when the hook ran
			stop := errors.New("the client is gone")
			wn, ok := body.(interface{ BeforeWait(func() error) bool })
			if !ok || !wn.BeforeWait(func() error {
				at = append(at, got)
				if len(at) == 1 {
					close(rest)
				}
				if failing {
					return stop
				}
				return nil
			}) {
				t.Fatalf("the body (%T) says nothing of its waits", body)
			}
			p := make([]byte, 64)
			for {
				n, err := body.Read(p)
				got += string(p[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					if !failing || !errors.Is(err, stop) {
						t.Fatalf("read: %v", err)
					}
					break
				}
			}
			wn.BeforeWait(nil)
			if len(at) != 1 || at[0] != one+two {
				t.Errorf("the hook ran with %q read, want once, with the chunks that came with the head", at)
			}
			want := one + two + three
			if failing {
				want = one + two
			}
			if got != want {
				t.Errorf("read %q, want %q", got, want)
			}
		})
	}
}
