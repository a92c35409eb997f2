//go:build !unix

package proxy

import "net"

// clientGone cannot look into a connection on this platform: a client is
// never known to be gone before its answer is written, unless its
// connection knows (a WebSocket turn's, package wsmode).
func clientGone(c net.Conn) bool {
	g, ok := c.(goner)
	return ok && g.Gone()
}

// idleConnDead cannot look into a connection on this platform: an idle
// upstream connection is taken as alive (a request that finds it closed
// is sent again, see doUpstream).
func idleConnDead(net.Conn) bool { return false }
