//go:build !unix

package sock

import (
	"errors"
	"net"
)

// ErrNotSocket is Peek's error for a connection that is not a socket.
var ErrNotSocket = errors.New("sock: not a socket")

// Peek cannot look into a connection on this platform: it reports
// ErrNotSocket for every connection.
func Peek(net.Conn) (pending, closed bool, err error) { return false, false, ErrNotSocket }
