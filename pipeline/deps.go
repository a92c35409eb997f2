package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/internal/stackgrow"
	"github.com/recallproxy/recall/plan"
)

// Deps are what the stages need of the server that runs them: package
// proxy fills them once, from its configuration (proxy.New), and every
// exchange reads them.
type Deps struct {
	// Store is where conversations are kept.
	Store history.Store
	// Lock takes a conversation's lock in this process (convlock.Table's
	// Acquire); the release it returns must be called exactly once.
	Lock func(ctx context.Context, k history.Key) (release func(), err error)
	// Log gets the store's failures, which the client sees only as their
	// kind.
	Log *slog.Logger
	// Now is the server's clock.
	Now func() time.Time
	// CommitTimeout bounds one commit: past it the commit counts as
	// failed, though its goroutine may still finish it.
	CommitTimeout time.Duration
	// Metrics counts the commits.
	Metrics Metrics
	// Goroutines runs each commit's goroutine (nil: one made for it).
	Goroutines *stackgrow.Pool
}

// Metrics is what the stages count (package metrics implements it).
type Metrics interface {
	// StoreOp observes one store operation ("load", "commit") that took
	// d.
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
	commit := func() {
		m, done, err := d.Commit(ctx, ch)
		result <- outcome{m, len(done.Append), err}
	}
	if deps.Goroutines != nil {
		deps.Goroutines.Go(commit) // grown already: the store's commit goes deep
	} else {
		go func() {
			stackgrow.Grow() // its one growth, while shallow
			commit()
		}()
	}
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

// Plan is the plan stage of tenant's request: the conversation's lock taken (held, if set, is
// one taken already, which Plan takes over), then plan.Make over in (its
// Store and Now are deps'), its load timed; mode, retry, pinned and tools
// are what the commit's rebase needs of the request (see Decision). It
// returns the decision and the release of the lock and of the lease the
// load took (in.Lease), which the caller owns; on an error it releases
// them itself. The error is the client's kind (apierr: Busy,
// StoreUnavailable, StoreReadFailed, OrphanToolResult, NothingToSend),
// or a *plan.SideError: the request is a side call.
func (deps *Deps) Plan(ctx context.Context, tenant string, in plan.Input, held func(), mode history.Mode, pinned bool) (d *Decision, release func(), err error) {
	lease, unlock := in.Lease, held
	if unlock == nil {
		if unlock, err = deps.Lock(ctx, in.Key); err != nil {
			return nil, nil, apierr.Busy
		}
	}
	defer func() {
		if err != nil { // the caller owns them only on success
			lease.Release()
			unlock()
		}
	}()
	in.Store = deps.Store
	in.Now = deps.Now()
	p, err := plan.Make(ctx, in)
	deps.Metrics.StoreOp("load", deps.Now().Sub(in.Now))
	if err != nil {
		var oe *history.OrphanResultError
		var se *plan.SideError
		switch {
		case errors.As(err, &se):
			return nil, nil, err // the caller sends the request as a side call
		case errors.Is(err, plan.ErrStore) && ctx.Err() != nil && !lease.Held():
			return nil, nil, apierr.Busy // another replica held the lease throughout
		case errors.Is(err, plan.ErrStore):
			deps.Log.Error("load failed", "tenant", tenant, "conversation", in.Key.Conversation, "error", err)
			if errors.Is(err, history.ErrUnavailable) {
				return nil, nil, apierr.StoreUnavailable
			}
			return nil, nil, apierr.StoreReadFailed
		case errors.As(err, &oe):
			// Its position in the client's messages: after the
			// instructions.
			return nil, nil, apierr.OrphanToolResult(len(in.Instructions) + oe.Index)
		case errors.Is(err, plan.ErrNothingToSend):
			return nil, nil, apierr.NothingToSend // never an empty messages array upstream
		}
		return nil, nil, err
	}
	d = NewDecision(Decision{Plan: p, Store: deps.Store, Key: in.Key, Mode: mode, Retry: in.Retry,
		Pinned: pinned, Tools: in.Thread != nil && in.Thread.Tools}, in.New)
	if lease.Held() {
		return d, func() { lease.Release(); unlock() }, nil
	}
	return d, unlock, nil
}

// Seal seals d's conversation's open episode after the turn's commit (the
// model called end_conversation): the turn belongs to the episode it
// ends. The exchange still holds the conversation's lock.
func (deps *Deps) Seal(ctx context.Context, d *Decision) error {
	for range MaxRebases + 1 {
		snap, err := d.Store.Load(ctx, d.Key, history.Query{})
		if err != nil {
			return err
		}
		_, err = d.Store.Commit(ctx, d.Key, history.Change{Version: snap.Meta.Version, Seal: true, Now: deps.Now().UnixNano()})
		if !errors.Is(err, history.ErrConflict) {
			return err
		}
	}
	return history.ErrConflict
}
