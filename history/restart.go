package history

import "sort"

// MergeRestart merges in, a client's context restarted from its own
// summary (package thread tells one), with a conversation in which that
// context began at s (Meta.Session). The summary replaced the stored
// messages from s.From on, and only those: as Sync does for a whole
// conversation, the client's messages are the truth for that part (their
// common prefix with it is kept, the rest of it superseded). The stored
// messages before it stay history: an agent's earlier processes' turns,
// which Recall injected and the agent's summary never saw.
//
// History is snap's tail up to s.Before, then the kept part. head reads
// the first n active messages from s.From on (those after s.Before.Seq);
// it is called only when snap's tail does not reach back past s.From.
func MergeRestart(in []Message, snap Snapshot, s Session, head HeadFunc) (Merged, error) {
	tail := snap.Tail
	i := sort.Search(len(tail), func(i int) bool { return tail[i].Seq > s.Before.Seq })
	before := tail[:i:i]
	ctx := Snapshot{Tail: tail[i:], Complete: i > 0 || snap.Complete}
	stored, p, err := commonPrefix(in, ctx, head)
	if err != nil {
		return Merged{}, err
	}
	kept := keep(stored, p)
	m := Merged{History: append(before, stored[:kept]...), New: in[p:]}
	b := s.Before
	switch {
	case kept > 0:
		b = Boundary{Seq: stored[kept-1].Seq, Turn: stored[kept-1].Turn}
	case len(before) > 0:
		b = Boundary{Seq: before[i-1].Seq, Turn: before[i-1].Turn}
	case snap.Complete:
		b = Boundary{} // nothing before the context is active any more
	}
	if b.Seq < snap.Meta.head().Seq {
		m.Supersede = &b
	}
	return m, nil
}
