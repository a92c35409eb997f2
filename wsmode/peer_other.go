//go:build !unix

package wsmode

import "net"

// peerClosed cannot look into a connection on this platform.
func peerClosed(net.Conn) bool { return false }
