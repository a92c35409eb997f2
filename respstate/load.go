package respstate

import (
	"bytes"
	"context"
	"slices"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// Response is a stored response as Load found it.
type Response struct {
	// Ref is what its id names.
	Ref  Ref
	key  history.Key
	meta history.Meta
	// answer are the answer's messages as the client got them (see
	// visible): from ref.Seq up to the next message that is neither the
	// model's nor Recall's own.
	answer []history.Message
	// response is the Response object POST returned, output left empty
	// (history.Message.Response, unpacked); nil for a turn stored without
	// it.
	response []byte
	// end is the sequence number of the turn's last message: the answer,
	// or a result of Recall's history tools after it.
	end uint64
	// Latest reports that no active message follows the turn: a request
	// naming it continues its conversation rather than a fork (Fork).
	Latest bool
}

// Load returns the stored response id names in namespace ns, or nil
// when there is none: an id Recall did not mint, a conversation that
// does not exist in ns, another incarnation of it, or an answer no
// longer active (forgotten, erased, superseded).
//
// The rounds of Recall's history tools (messages flagged
// history.Internal: its calls, and their results) are part of the turn
// but not of the answer: they are skipped wherever they stand, before
// the answer or after it. Errors are the store's, as the client is told
// them (StoreReadErr).
func (st *State) Load(ctx context.Context, ns, id string) (*Response, error) {
	return st.LoadLeased(ctx, ns, id, nil)
}

// LoadLeased is Load with the read of the conversation's metadata taking
// lease (history.Query.Lease) on a store replicas share, in the same
// round trip: an exchange that continues the response holds it from
// there to its commit. It takes no lease for an id that names no
// conversation; the caller releases it otherwise.
func (st *State) LoadLeased(ctx context.Context, ns, id string, lease *history.ExchangeLease) (*Response, error) {
	ref, ok := ParseID(id)
	if !ok {
		return nil, nil
	}
	r := &Response{Ref: ref, key: history.Key{Tenant: ns, Conversation: ref.Conversation}}
	snap, err := st.cfg.Store.Load(ctx, r.key, history.Query{After: ^uint64(0), Lease: lease}) // the metadata alone
	if err != nil {
		return nil, StoreReadErr(err)
	}
	r.meta = snap.Meta
	if r.meta.NextSeq <= ref.Seq || r.meta.Incarnation != ref.Incarnation {
		return nil, nil
	}
	r.Latest = true
	var turn []history.Message
	answered := false // a result of Recall's followed the answer
	// The turn's input, and the message right before it (seq from-1,
	// when active): they must be the input the id counts (inputMatches).
	from := ref.Seq - uint64(ref.Input)
	var before, input []history.Message
	var unpackErr error
	err = st.cfg.Store.Messages(ctx, r.key, max(from, 2)-2, false, func(m history.Message) bool {
		switch {
		case m.Seq < from:
			before = append(before[:0], history.Message{Seq: m.Seq, CreatedAt: m.CreatedAt})
			return true
		case m.Seq < ref.Seq:
			input = append(input, history.Message{Seq: m.Seq, CreatedAt: m.CreatedAt})
			return true
		}
		internal := m.Flags&history.Internal != 0
		if len(turn) == 0 && (m.Seq != ref.Seq || m.Role != wire.RoleAssistant) ||
			!internal && (m.Role != wire.RoleAssistant || answered) {
			r.Latest = false
			return false
		}
		if internal && m.Role != wire.RoleAssistant && slices.ContainsFunc(turn, isAnswer) {
			answered = true
		}
		m.Raw = bytes.Clone(m.Raw)
		if len(turn) == 0 {
			if r.response, unpackErr = responses.UnpackStored(m.Response); unpackErr != nil {
				return false
			}
		}
		m.Response = nil
		turn = append(turn, m)
		r.end = m.Seq
		return true
	})
	if err == nil {
		err = unpackErr
	}
	if err != nil {
		return nil, StoreReadErr(err)
	}
	if r.answer = visible(turn); len(r.answer) == 0 || !inputMatches(before, input, turn[0]) {
		return nil, nil
	}
	return r, nil
}

// inputMatches reports whether input, the active messages an id counts
// as its turn's input, and before, the message right before them (if
// active), are what the turn stored: the input and the answer are one
// commit (every message of it has the commit's CreatedAt) and the
// message before is another's. One response then has one id: a count
// too large takes in an earlier turn's messages, one too small leaves
// out a message of the same commit (ids are checked against the store,
// never trusted).
func inputMatches(before, input []history.Message, answer history.Message) bool {
	for _, m := range input {
		if !m.CreatedAt.Equal(answer.CreatedAt) {
			return false
		}
	}
	return len(before) == 0 || !before[0].CreatedAt.Equal(answer.CreatedAt)
}

// isAnswer reports whether m is a message of the model's the client got.
func isAnswer(m history.Message) bool {
	return m.Role == wire.RoleAssistant && m.Flags&history.Internal == 0
}

// visible returns msgs (consecutive messages of one conversation) as the
// client holds them: without the calls and results of Recall's history
// tools (history.Internal), and an answer that called Recall's tools and
// the client's (history.Mixed) with the client's calls only. Recall's
// calls are those its own results among msgs answer.
func visible(msgs []history.Message) []history.Message {
	var mine map[string]bool
	var ids []string
	for _, m := range msgs {
		if m.Flags&history.Internal == 0 {
			continue
		}
		for _, id := range m.Codec().Results(ids[:0], m.Raw) {
			if mine == nil {
				mine = map[string]bool{}
			}
			mine[id] = true
		}
	}
	out := make([]history.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Flags&history.Internal != 0 {
			continue
		}
		if m.Flags&history.Mixed != 0 && len(mine) > 0 {
			if kept, ok := m.Codec().KeepCalls(m.Raw, func(id string) bool { return !mine[id] }); ok {
				m.Raw = kept
			}
		}
		out = append(out, m)
	}
	return out
}
