package upstreamtest

import (
	"net"
	"testing"
)

// ServeRaw is an upstream that speaks HTTP by hand, for the faults a
// Server cannot commit: it listens on loopback and hands each connection
// to serve in a goroutine of its own, closing the connection when serve
// returns and the listener when t ends. It returns the listener's
// address, host:port.
func ServeRaw(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
