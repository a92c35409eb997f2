package proxy

import (
	"net"
	"sync/atomic"
)

// CountDeadlines wraps ln so that n counts the deadlines its connections
// are given.
func CountDeadlines(ln net.Listener, n *atomic.Int64) net.Listener { return countingListener{ln, n} }
