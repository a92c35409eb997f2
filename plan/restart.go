package plan

import (
	"context"

	"github.com/recallproxy/recall/history"
)

// restart merges a request whose first message opens an agent's context
// restarted from its own summary (thread.Restarted). The summary replaced
// the stored messages of the context it summarised, from where that
// context began (history.Meta.Session) on: history.MergeRestart
// supersedes those and keeps the turns before them, which the agent never
// held (an agent keeps only its own context; the turns of its earlier
// processes are in it because Recall injected them) and so never
// summarised. Where the context began is not known (a conversation
// stored before Recall remembered it, or rewritten since from before that
// point), every stored message is taken as replaced, as
// X-Recall-History: sync takes it.
func restart(ctx context.Context, in Input, news []history.Message, snap history.Snapshot, after uint64, head history.HeadFunc) (history.Merged, bool, error) {
	s := snap.Meta.Session
	if !s.Known() {
		return merge(history.Sync, news, snap, after, head, in.Retry)
	}
	m, err := history.MergeRestart(news, snap, s, headFunc(ctx, in.Store, in.Key, s.Before.Seq))
	return m, false, err
}

// readPastSession reads a restarted context's conversation again, further
// back, when the tail snap holds has less than q's budget of messages
// from before the context began (history.Meta.Session): those are the
// history a restart keeps, and the context's own messages, which it
// supersedes, took the read's room. A conversation whose summary covers
// everything before the context needs no more.
func readPastSession(ctx context.Context, st history.Store, k history.Key, q history.Query, snap history.Snapshot) (history.Snapshot, error) {
	s := snap.Meta.Session
	if !s.Known() || snap.Complete || q.Resolve(&snap.Meta).After >= s.Before.Seq {
		return snap, nil
	}
	tokens := 0
	for _, m := range snap.Tail {
		if m.Seq <= s.Before.Seq {
			tokens += m.Tokens
		}
	}
	if tokens >= q.Tokens {
		return snap, nil
	}
	q.MinMessages += max(0, snap.Meta.Messages-s.Messages)
	q.Tokens += max(0, snap.Meta.Tokens-s.Tokens)
	q.FromCut = q.FromCut && snap.Meta.Cut <= s.Before.Seq
	return st.Load(ctx, k, q)
}
