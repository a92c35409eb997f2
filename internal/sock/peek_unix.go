//go:build unix

package sock

import (
	"errors"
	"net"
	"syscall"
)

// ErrNotSocket is Peek's error for a connection that is not a socket.
var ErrNotSocket = errors.New("sock: not a socket")

// Peek looks at c's socket without waiting and without consuming: bytes
// are pending, or the peer closed (an orderly close or a reset). err is
// set when c is not a socket (ErrNotSocket) or is closed on this side.
func Peek(c net.Conn) (pending, closed bool, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false, false, ErrNotSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, false, err
	}
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			pending, closed = n > 0, n == 0
		case err == syscall.EAGAIN || err == syscall.EINTR:
		default:
			closed = true // reset
		}
		return true // done: never wait for readability
	})
	return pending, closed, err
}
