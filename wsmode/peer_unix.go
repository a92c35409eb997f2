//go:build unix

package wsmode

import (
	"net"
	"syscall"
)

// peerClosed reports whether c's peer closed or reset it, without
// waiting, consuming, or taking the connection's read lock: the socket's
// reader may be blocked reading c, which a peek through RawConn.Read
// would wait for. Bytes pending are not a close; a connection this
// cannot look into is not closed.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			closed = n == 0
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default:
			closed = true // reset
		}
	})
	return closed || err != nil
}
