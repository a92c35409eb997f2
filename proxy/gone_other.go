//go:build !unix

package proxy

import "net"

// clientGone cannot look into a connection on this platform: a client is
// never known to be gone before its answer is written.
func clientGone(net.Conn) bool { return false }

// idleConnDead cannot look into a connection on this platform: an idle
// upstream connection is taken as alive (a request that finds it closed
// is sent again, see doUpstream).
func idleConnDead(net.Conn) bool { return false }
