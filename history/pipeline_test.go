package history_test

import (
	"context"
	"slices"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// memStore is a one-conversation history.Store in memory, written as a
// plain reference (a linear scan of every message) and sharing only
// history.Apply with the real stores. It ignores keys.
type memStore struct {
	meta  history.Meta
	msgs  []history.Message // msgs[i].Seq == i+1
	loads int               // Load calls, for the cache tests
	walks int               // Messages calls, for the cache tests
}

var _ history.Store = (*memStore)(nil)

func (s *memStore) Load(_ context.Context, _ history.Key, q history.Query) (history.Snapshot, error) {
	s.loads++
	snap := history.Snapshot{Meta: s.meta}
	q = q.Resolve(&s.meta)
	var tail []history.Message
	tokens, turns := 0, 0
	for i := len(s.msgs) - 1; i >= 0; i-- {
		m := s.at(i)
		if !m.Active() {
			continue
		}
		oldest := ""
		if len(tail) > 0 {
			oldest = tail[len(tail)-1].Role
		}
		if q.Done(len(tail), tokens, turns, oldest, m.Seq, s.meta.Cut) {
			break
		}
		tail = append(tail, m)
		tokens += m.Tokens
		if m.Role == wire.RoleUser {
			turns++
		}
	}
	slices.Reverse(tail)
	snap.Tail = tail
	snap.Complete = len(tail) >= s.meta.Messages
	return snap, nil
}

func (s *memStore) Commit(_ context.Context, _ history.Key, c history.Change) (history.Meta, error) {
	if err := c.Check(&s.meta); err != nil {
		return history.Meta{}, err
	}
	var superseded []history.Message
	if c.Supersede != nil {
		for i := int(c.Supersede.Seq); i < len(s.msgs); i++ {
			if m := s.at(i); m.Active() {
				superseded = append(superseded, m)
			}
		}
	}
	meta, writes := history.Apply(s.meta, c, superseded)
	for _, w := range writes {
		if int(w.Seq) <= len(s.msgs) {
			s.msgs[w.Seq-1] = w
		} else {
			s.msgs = append(s.msgs, w)
		}
	}
	s.meta = meta
	return meta, nil
}

func (s *memStore) Messages(_ context.Context, _ history.Key, after uint64, all bool, fn func(history.Message) bool) error {
	s.walks++
	for i := int(min(after, uint64(len(s.msgs)))); i < len(s.msgs); i++ {
		if m := s.at(i); (all && m.Flags&history.Erased == 0 || m.Active()) && !fn(m) {
			return nil
		}
	}
	return nil
}

// at returns message i with the flags the metadata gives it.
func (s *memStore) at(i int) history.Message {
	m := s.msgs[i]
	m.Flags |= s.meta.FlagsAt(m.Seq)
	return m
}

func (s *memStore) List(context.Context, string, history.ListQuery) ([]history.Entry, bool, error) {
	return nil, false, nil
}

func (s *memStore) Search(context.Context, string, history.SearchQuery) ([]history.Hit, error) {
	return nil, nil
}

func (s *memStore) Namespaces(context.Context, string, string, int) ([]string, error) {
	return nil, nil
}

func (s *memStore) AppendExchanges(context.Context, history.Key, []history.ExchangeRecord) error {
	return nil
}

func (s *memStore) Exchanges(context.Context, history.Key, string, int) ([]history.ExchangeRecord, error) {
	return nil, nil
}

func (s *memStore) Delete(context.Context, history.Key) error {
	*s = memStore{}
	return nil
}

// request is what the pipeline needs of one chat-completions request,
// instructions already split off.
type request struct {
	in       []history.Message
	mode     history.Mode
	budget   int
	window   int // the model's context length, 0: unknown
	fixed    int
	strategy history.Strategy
}

// outcome is what the pipeline did with a request.
type outcome struct {
	snap   history.Snapshot
	merged history.Merged
	fresh  []history.Message // merged.New with the Seq each will be stored under
	window *history.Window
	sent   []history.Message
}

// curate runs a request through history the way the proxy does: load the
// tail the budget and the merge need, merge, split into turns from the
// stored cut point, curate.
func curate(ctx context.Context, st history.Store, k history.Key, r request) (outcome, error) {
	var o outcome
	var err error
	o.snap, err = st.Load(ctx, k, history.Query{MinMessages: len(r.in), Tokens: r.budget, FromCut: true})
	if err != nil {
		return o, err
	}
	head := func(n int) ([]history.Message, error) {
		out := make([]history.Message, 0, n)
		err := st.Messages(ctx, k, 0, false, func(m history.Message) bool {
			out = append(out, m)
			return len(out) < n
		})
		return out, err
	}
	if o.merged, err = history.Merge(r.mode, r.in, o.snap, head); err != nil {
		return o, err
	}
	o.fresh = slices.Clone(o.merged.New)
	next := max(o.snap.Meta.NextSeq, 1)
	for i := range o.fresh {
		o.fresh[i].Seq = next + uint64(i)
	}
	cut := o.snap.Meta.Cut
	if b := o.merged.Supersede; b != nil && cut > b.Seq {
		cut = 0 // the cut named a message the edit supersedes
	}
	o.window = history.NewWindow(o.merged.History, o.fresh, cut, o.snap.Meta.Turns)
	o.window.Budget, o.window.Fixed, o.window.Window = r.budget, r.fixed, r.window
	o.sent, err = history.Curate(o.window, r.strategy)
	return o, err
}

// commit stores the request's new messages and the answer, with the cut
// point curation chose, as the proxy does after a complete answer.
func commit(ctx context.Context, st history.Store, k history.Key, o outcome, answer history.Message, now int64) (history.Meta, error) {
	c := history.Change{
		Version:   o.snap.Meta.Version,
		Supersede: o.merged.Supersede,
		Append:    append(slices.Clone(o.merged.New), answer),
		Cut:       o.window.Cut,
		Now:       now,
	}
	return st.Commit(ctx, k, c)
}
