package history

import "encoding/binary"

// Retry says how a request may repeat the conversation's last exchange: a
// client whose request timed out or whose connection broke retries it,
// and the retry must replace the turn the first attempt may have stored,
// not add a second copy of it.
type Retry struct {
	// Key is a digest of the request's Idempotency-Key header, 0 if none.
	// A request with the key of the last exchange repeats it.
	Key uint64
	// Marked reports that the client marked the request as a retry (the
	// official SDKs' x-stainless-retry-count > 0). A marked request repeats
	// the last exchange when its new messages are the same.
	Marked bool
}

// HashMessages combines the canonical hashes of msgs, in order.
func HashMessages(msgs []Message) uint64 {
	// FNV-1a over the little-endian hashes: order-sensitive and cheap.
	h := uint64(14695981039346656037)
	var b [8]byte
	for i := range msgs {
		binary.LittleEndian.PutUint64(b[:], msgs[i].Hash)
		for _, c := range b {
			h ^= uint64(c)
			h *= 1099511628211
		}
	}
	return h
}

// WithoutLast returns the snapshot as it was before its last exchange
// (Meta.Last), and false if there is none. NextSeq is kept: new messages
// are still appended after the exchange's (superseded) ones. The tail must reach back to
// Meta.Last.From for the result to be a valid snapshot.
func (s Snapshot) WithoutLast() (Snapshot, bool) {
	last := s.Meta.Last
	if last == nil {
		return s, false
	}
	out := s
	out.Meta.Last = nil
	out.Meta.LastTurn = last.Before.Turn
	out.Meta.Messages -= last.Messages
	out.Meta.Turns = last.Turns
	out.Meta.Tokens = last.Tokens
	if out.Meta.Messages <= 0 {
		out.Meta.Messages, out.Meta.FirstHash = 0, 0
	}
	if out.Meta.Cut >= last.From {
		out.Meta.Cut = 0
	}
	n := len(s.Tail)
	for n > 0 && s.Tail[n-1].Seq >= last.From {
		n--
	}
	out.Tail = s.Tail[:n:n]
	return out, true
}

// MergeRetry merges in with the stored history like [Merge], unless the
// request repeats the conversation's last exchange (see [Retry]): then it
// merges against the history as it was before that exchange and
// supersedes the exchange's messages, so the retry's turn replaces them.
// It reports whether it did. snap's tail must reach back to Meta.Last.From
// when Meta.Last is set (load at least len(in)+Meta.Last.Messages messages).
func MergeRetry(mode Mode, in []Message, snap Snapshot, head HeadFunc, r Retry) (Merged, bool, error) {
	last := snap.Meta.Last
	if last != nil && mode != Off && (r.Key != 0 && r.Key == last.Key || r.Marked) {
		before, _ := snap.WithoutLast()
		m, err := Merge(mode, in, before, head)
		if err != nil {
			return Merged{}, false, err
		}
		if r.Key != 0 && r.Key == last.Key || HashMessages(m.New) == last.Hash {
			if m.Supersede == nil || m.Supersede.Seq > last.Before.Seq {
				b := last.Before
				m.Supersede = &b
			}
			return m, true, nil
		}
	}
	m, err := Merge(mode, in, snap, head)
	return m, false, err
}

// Possible reports whether the request may repeat an earlier one.
func (r Retry) Possible() bool { return r.Key != 0 || r.Marked }
