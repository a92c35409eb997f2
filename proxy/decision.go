package proxy

import (
	"context"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// An exchange's state is in three parts. What the request is (its
// caller, key, thread, retry key, protocols) is set while it is read and
// decoded. What the plan decided is a decision: prepare makes it once and
// nothing writes it after, so it is the one part of an exchange another
// goroutine may read (the commit's, which may outlive the handler past
// its deadline, reads the decision and the change, nothing else; the
// change points to the exchange's lease, which guards itself). What
// the exchange's record and log line report (exchangeFacts) is written by
// whichever goroutine owns the exchange at the time: the handler, then
// the stream's writer it hands the exchange to.

// decision is what an exchange's plan decided: the plan (what goes
// upstream, what the commit stores: its Fresh messages, the boundary it
// supersedes, the turns it cuts) and what a rebase after a conflict
// merges again.
type decision struct {
	*plan.Plan
	store history.Store
	key   history.Key
	mode  history.Mode
	// in are the client's new messages as roles and hashes only: the
	// body does not outlive the handler.
	in    []history.Message
	retry history.Retry
	// pinned: the answer's id names the sequence numbers it is to get
	// (the Responses API's), so a rebase that would move it fails.
	pinned bool
	// incarnation, if not 0, is the one a conversation the commit creates
	// gets (the answer's id names it: nameResponse draws it); tools, that
	// the thread's requests offer tools.
	incarnation uint64
	tools       bool
}

// decide makes x's decision from its plan p, merged in mode from the
// client's new messages in.
func (x *exchange) decide(p *plan.Plan, mode history.Mode, in []history.Message) *decision {
	d := &decision{Plan: p, store: x.s.cfg.Store, key: x.key, mode: mode, retry: x.retry,
		pinned: x.pinned, tools: x.thread != nil && x.thread.Tools}
	d.in = make([]history.Message, len(in))
	for i, m := range in {
		d.in[i] = history.Message{Role: m.Role, Hash: m.Hash}
	}
	return d
}

// change is the commit of the new messages followed by answer, made at
// now (Unix ns).
func (d *decision) change(answer []history.Message, now int64) history.Change {
	return history.Change{
		Version:     d.Version,
		Base:        d.base(),
		Supersede:   d.Supersede,
		Append:      append(d.Fresh, answer...),
		Cut:         d.Cut,
		Now:         now,
		Exchange:    &history.ExchangeID{Key: d.retry.Key, Hash: d.ExchangeHash},
		Seal:        d.Seal,
		Tools:       d.tools,
		Incarnation: d.incarnation,
	}
}

// rebase recomputes ch against the conversation as it is now, after a
// commit met ErrConflict (another writer changed it since the load: a
// summary landing, a late commit abandoned at its deadline, an API call).
// It keeps the answer and the new messages, and fails with ErrConflict if
// the merge no longer finds the same new messages.
func (d *decision) rebase(ctx context.Context, ch history.Change) (history.Change, error) {
	q := history.Query{MinMessages: len(d.in)}
	snap, err := d.store.Load(ctx, d.key, q)
	if err == nil && snap.Meta.Last != nil && d.retry.Possible() {
		q.MinMessages += snap.Meta.Last.Messages
		snap, err = d.store.Load(ctx, d.key, q)
	}
	if err != nil {
		return ch, err
	}
	if d.pinned && (snap.Meta.NextSeq != d.Meta.NextSeq || snap.Meta.Incarnation != d.Meta.Incarnation) {
		return ch, history.ErrConflict // the answer's id names the sequence numbers it was to get
	}
	merged, _, err := history.MergeRetry(d.mode, d.in, snap, d.head(ctx), d.retry)
	if err != nil {
		return ch, err
	}
	if len(merged.New) != len(d.Fresh) || history.HashMessages(merged.New) != d.ExchangeHash {
		return ch, history.ErrConflict
	}
	ch.Version, ch.Base, ch.Supersede, ch.Cut = snap.Meta.Version, &snap.Meta, merged.Supersede, 0
	return ch, nil
}

// base is the metadata the plan was computed from, for the commit's
// Change.Base.
func (d *decision) base() *history.Meta {
	if d.Meta.Version != d.Version {
		return nil
	}
	return &d.Meta
}

// head returns the merge's reader of a conversation's first messages.
func (d *decision) head(ctx context.Context) history.HeadFunc {
	return func(n int) ([]history.Message, error) {
		var head []history.Message
		err := d.store.Messages(ctx, d.key, 0, false, func(m history.Message) bool {
			head = append(head, m)
			return len(head) < n
		})
		return head, err
	}
}

// contextTokens is the planned context's size in tokens (0 before a plan,
// or without one).
func (x *exchange) contextTokens() int {
	if x.dec == nil {
		return 0
	}
	return x.dec.Report.Tokens
}
