package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/recallproxy/recall/history"
)

// LockRefs returns how many requests hold or wait for k's lock.
func (s *Server) LockRefs(k history.Key) int { return s.cfg.Locks.Refs(k) }

// WaitLockRefs waits until n requests hold or wait for k's lock, or ctx
// ends.
func (s *Server) WaitLockRefs(ctx context.Context, k history.Key, n int) error {
	for s.LockRefs(k) < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d on the lock of %s: %w", n, k, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// The pools of upstream and client bodies' buffers (body.go).
var (
	GetReadBuf = getReadBuf
	PutReadBuf = putReadBuf
	PutBodyBuf = putBodyBuf
)

// WithHeaderHold makes the hold of every stream's headers
// (StreamHeaderHold) end when fire does.
func WithHeaderHold(fire <-chan time.Time) func(*Config) {
	return func(c *Config) { c.holdTimer = func(time.Duration) <-chan time.Time { return fire } }
}
