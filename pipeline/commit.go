package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// Decision is what an exchange's plan decided: the plan (what goes
// upstream, what the commit stores: its Fresh messages, the boundary it
// supersedes, the turns it cuts) and what a rebase after a conflict
// merges again.
type Decision struct {
	*plan.Plan
	Store history.Store
	Key   history.Key
	Mode  history.Mode
	// In are the client's new messages as roles and hashes only: the
	// body does not outlive the handler (NewDecision copies them so).
	In    []history.Message
	Retry history.Retry
	// Pinned: the answer's id names the sequence numbers it is to get
	// (the Responses API's), so a rebase that would move it fails.
	Pinned bool
	// Incarnation, if not 0, is the one a conversation the commit creates
	// gets (the answer's id names it); Tools, that the thread's requests
	// offer tools.
	Incarnation uint64
	Tools       bool
}

// NewDecision is d with its In set to the roles and hashes of in, the
// client's new messages merged in d.Mode.
func NewDecision(d Decision, in []history.Message) *Decision {
	d.In = make([]history.Message, len(in))
	for i := range in {
		d.In[i] = history.Message{Role: in[i].Role, Hash: in[i].Hash}
	}
	return &d
}

// SideOf reports whether err is the plan's finding that the request is a
// side call, and why.
func SideOf(err error) (string, bool) {
	if err != nil {
		var se *plan.SideError // allocated only here
		if errors.As(err, &se) {
			return se.Reason, true
		}
	}
	return "", false
}

// MaxRebases bounds the rebases of one commit.
const MaxRebases = 3

// Change is the commit of the new messages followed by answer, made at
// now (Unix ns).
func (d *Decision) Change(answer []history.Message, now int64) history.Change {
	return history.Change{
		Version:     d.Version,
		Base:        d.base(),
		Supersede:   d.Supersede,
		Append:      append(d.Fresh, answer...),
		Cut:         d.Cut,
		Now:         now,
		Exchange:    &history.ExchangeID{Key: d.Retry.Key, Hash: d.ExchangeHash},
		Seal:        d.Seal,
		Tools:       d.Tools,
		Incarnation: d.Incarnation,
	}
}

// Commit is the commit stage's write: ch to the store, rebased and tried
// again (at most MaxRebases times) when another writer changed the
// conversation since the plan (not an exchange: those hold the lease).
// It reads only d and writes only ch (and, through ch.Lease, the lease
// its commit drops), so it may outlive the exchange past its deadline.
func (d *Decision) Commit(ctx context.Context, ch history.Change) (history.Meta, history.Change, error) {
	var m history.Meta
	var err error
	for attempt := 0; ; attempt++ {
		m, err = d.Store.Commit(ctx, d.Key, ch)
		if !errors.Is(err, history.ErrConflict) || attempt == MaxRebases {
			return m, ch, err
		}
		if ch, err = d.rebase(ctx, ch); err != nil {
			return m, ch, err
		}
	}
}

// rebase recomputes ch against the conversation as it is now, after a
// commit met ErrConflict (another writer changed it since the load: a
// summary landing, a late commit abandoned at its deadline, an API call).
// It keeps the answer and the new messages, and fails with ErrConflict if
// the merge no longer finds the same new messages.
func (d *Decision) rebase(ctx context.Context, ch history.Change) (history.Change, error) {
	q := history.Query{MinMessages: len(d.In)}
	snap, err := d.Store.Load(ctx, d.Key, q)
	if err == nil && snap.Meta.Last != nil && d.Retry.Possible() {
		q.MinMessages += snap.Meta.Last.Messages
		snap, err = d.Store.Load(ctx, d.Key, q)
	}
	if err != nil {
		return ch, err
	}
	if d.Pinned && (snap.Meta.NextSeq != d.Meta.NextSeq || snap.Meta.Incarnation != d.Meta.Incarnation) {
		return ch, history.ErrConflict // the answer's id names the sequence numbers it was to get
	}
	merged, _, err := history.MergeRetry(d.Mode, d.In, snap, d.head(ctx), d.Retry)
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
func (d *Decision) base() *history.Meta {
	if d.Meta.Version != d.Version {
		return nil
	}
	return &d.Meta
}

// head returns the merge's reader of a conversation's first messages.
func (d *Decision) head(ctx context.Context) history.HeadFunc {
	return func(n int) ([]history.Message, error) {
		var head []history.Message
		err := d.Store.Messages(ctx, d.Key, 0, false, func(m history.Message) bool {
			head = append(head, m)
			return len(head) < n
		})
		return head, err
	}
}

// AnswerMessages is the commit stage's reading of an answer: its stored
// form (a.Stored, in a.Protocol) as the messages the commit appends, each
// with its role, hash and tokens. A one-message answer to a request for
// one choice (oneChoice) from an upstream that speaks its protocol (up)
// is counted by the upstream's output tokens; any other through counter
// in enc.
func AnswerMessages(a *wire.Answer, counter plan.Counter, enc tokens.Encoding, oneChoice bool, up wire.Protocol) ([]history.Message, error) {
	stored, proto := a.Stored, a.Protocol
	codec := wire.For(proto)
	msgs := make([]history.Message, 0, len(stored))
	for _, raw := range stored {
		role := codec.Role(raw)
		if role == "" {
			role = wire.RoleAssistant
		}
		msgs = append(msgs, history.Message{Role: role, Protocol: proto, Raw: raw, Hash: a.HashOf(codec, raw)})
	}
	// The upstream already counted a one-message answer to a request for
	// one choice: its output tokens plus the message overhead are the
	// count, exactly and for free. Otherwise count it.
	if len(msgs) == 1 && oneChoice && a.Usage.OutputTokens > 0 && proto == up {
		msgs[0].Tokens = a.Usage.OutputTokens + tokens.MessageOverhead
	} else {
		for i := range msgs {
			msgs[i].Tokens = plan.Count(counter, enc, proto, msgs[i].Raw)
		}
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: the answer has nothing to record", apierr.UpstreamBadResponse)
	}
	return msgs, nil
}
