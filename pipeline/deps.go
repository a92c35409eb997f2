package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// Deps are what the stages need of the server that runs them: package
// proxy fills them once, from its configuration (proxy.New), and every
// exchange reads them.
type Deps struct {
	// Now is the server's clock.
	Now func() time.Time
	// CommitTimeout bounds one commit: past it the commit counts as
	// failed, though its goroutine may still finish it.
	CommitTimeout time.Duration
	// Metrics counts the commits.
	Metrics Metrics
}

// Metrics is what the stages count (package metrics implements it).
type Metrics interface {
	// StoreOp observes one store operation ("commit") that took d.
	StoreOp(op string, d time.Duration)
	// CommitFailed counts a tenant's commit that failed (reason "error"
	// or "timeout").
	CommitFailed(tenant, reason string)
	// Usage adds a committed answer's usage as the upstream reported it.
	Usage(tenant, upstream string, input, cached, output int)
}

// ErrCommitTimeout is a commit that did not return within the commit
// timeout.
var ErrCommitTimeout = errors.New("proxy: commit timed out")

// Commit is the commit stage: ch committed through d within ctx, from
// start. The commit runs in a goroutine of its own that reads only d and
// writes only ch (and, through ch.Lease, the lease its commit drops), so
// that past ctx's deadline it may outlive the exchange. rec gets the seqs
// stored, or CommitFailed; a failure is the client's error kind
// (apierr.NoSpace, StoreUnavailable, CommitFailed). The usage committed
// (rec.Usage) is counted for tenant and the upstream's protocol.
func (deps *Deps) Commit(ctx context.Context, start time.Time, d *Decision, ch history.Change, tenant, upstream string, rec *Record) error {
	type outcome struct {
		meta history.Meta
		// appended is how many messages the change that went in (the
		// one given, or its rebase) appended.
		appended int
		err      error
	}
	result := make(chan outcome, 1)
	go func() {
		m, done, err := d.Commit(ctx, ch)
		result <- outcome{m, len(done.Append), err}
	}()
	var err error
	select {
	case o := <-result:
		err = o.err
		if n := uint64(o.appended); err == nil && n > 0 {
			rec.CommittedFrom, rec.CommittedTo = o.meta.NextSeq-n, o.meta.NextSeq-1
			rec.CommittedIncarnation = o.meta.Incarnation
		}
	case <-ctx.Done():
		err = fmt.Errorf("%w: %w", ErrCommitTimeout, ctx.Err())
	}
	deps.Metrics.StoreOp("commit", deps.Now().Sub(start))
	if err != nil {
		rec.CommitFailed = true
		reason := "error"
		if errors.Is(err, ErrCommitTimeout) {
			reason = "timeout"
		}
		deps.Metrics.CommitFailed(tenant, reason)
		if errors.Is(err, history.ErrNoSpace) {
			return fmt.Errorf("%w: %w", apierr.NoSpace, err)
		}
		if errors.Is(err, history.ErrUnavailable) {
			return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
		}
		return fmt.Errorf("%w: %w", apierr.CommitFailed, err)
	}
	deps.Metrics.Usage(tenant, upstream, rec.Usage.InputTokens, rec.Usage.CachedTokens, rec.Usage.OutputTokens)
	return nil
}
