package proxy

import (
	"context"

	"github.com/recallproxy/recall/history"
)

// Lock takes the per-conversation lock chat requests take (Config.Locks),
// for background work that changes a conversation (retention): the
// returned release must be called exactly once.
func (s *Server) Lock(ctx context.Context, k history.Key) (release func(), err error) {
	return s.cfg.Locks.Acquire(ctx, k)
}
