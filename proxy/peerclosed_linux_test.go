package proxy_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// waitPeerClosed waits until the kernel has delivered the close of the
// client connection c to the server's end of it (its socket in
// /proc/net/tcp is no longer ESTABLISHED, or gone), with a deadline. A
// close returns before loopback delivers its FIN or RST when softirqs are
// deferred on a busy machine: a test that releases the upstream right
// after it may see the relay's check before the close arrived.
func waitPeerClosed(t *testing.T, c net.Conn) {
	t.Helper()
	client, ok1 := c.LocalAddr().(*net.TCPAddr)
	server, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || client.IP.To4() == nil {
		return
	}
	// The server's socket: local address the server's, remote the client's.
	want := procAddr(server) + " " + procAddr(client)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/net/tcp")
		if err != nil {
			return // cannot look: nothing to wait for
		}
		state := ""
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 3 && f[1]+" "+f[2] == want {
				state = f[3]
			}
		}
		if state != "01" { // not ESTABLISHED: CLOSE_WAIT, closed, or gone
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the server's end of %s never saw the client's close", c.LocalAddr())
}

// procAddr is a as /proc/net/tcp writes it: the IPv4 address as a
// little-endian word in hex, the port in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return strings.ToUpper(hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, binary.BigEndian.Uint32(ip)))) + ":" + fmt.Sprintf("%04X", a.Port)
}
