package history

import (
	"github.com/recallproxy/recall/wire"
)

// A client may resend the model's answers without the thinking or
// reasoning they came with: Anthropic lets a client leave earlier turns'
// thinking blocks out, and a Responses client may leave reasoning items
// out. Compared as sent, such a resend shares nothing with storage after
// its first message, and every answer would be stored again on every
// turn. mergeThinking compares both sides as the client may send them
// (wire.Thinking): an answer without its thinking is the stored answer,
// and a reasoning item the client left out is skipped. The stored
// messages, thinking and signatures included, stay what is sent to the
// upstream that reads them; their stored hashes (Message.Hash) are not
// changed, so that data stored by earlier versions still matches.

// thin is a run of messages as a client may resend them: the messages a
// client may leave out are gone, and the others carry the hash of their
// form without thinking (their own when they hold none). at[i] is the
// index in the original run of thin's i-th message.
type thin struct {
	msgs []Message
	at   []int
}

// thinOf returns msgs as a client may resend them, and whether any of
// them holds thinking or reasoning.
func thinOf(msgs []Message) (thin, bool) {
	t := thin{msgs: make([]Message, 0, len(msgs)), at: make([]int, 0, len(msgs))}
	any := false
	for i := range msgs {
		m := msgs[i]
		if m.Role == wire.RoleAssistant {
			if tc, ok := m.Codec().(wire.Thinking); ok {
				if h, empty, ok := tc.WithoutThinking(m.Raw); ok {
					any = true
					if empty {
						continue
					}
					m.Hash = h
				}
			}
		}
		t.msgs = append(t.msgs, m)
		t.at = append(t.at, i)
	}
	return t, any
}

// mergeThinking is Merge in Auto with in and the stored messages compared
// as a client may resend them (see thin): the longest overlap of in's
// start with the stored end, or else a resend from the conversation's
// first message that shares a stored assistant message with it, up to
// where it diverges (the stored rest is superseded, as an edit). It
// reports false if neither holds, or if neither side holds thinking or
// reasoning (the comparison as sent has said all there is).
func mergeThinking(in []Message, snap Snapshot, head HeadFunc) (Merged, bool, error) {
	tin, inThinks := thinOf(in)
	if len(tin.msgs) == 0 {
		return Merged{}, false, nil
	}
	tail, tailThinks := thinOf(visible(snap.Tail))
	if j := overlap(tin.msgs, tail.msgs); j > 0 && (inThinks || tailThinks) {
		return Merged{History: snap.Tail, New: in[tin.at[j-1]+1:]}, true, nil
	}
	if len(in) < 2 || snap.Meta.Messages == 0 || in[0].Hash != snap.Meta.FirstHash ||
		!hasAssistant(tin.msgs[1:]) {
		return Merged{}, false, nil
	}
	// A resend from the first message: read as much of the conversation's
	// start as it could cover, as the client may resend it.
	stored := snap.Tail
	var vis []Message
	var sv thin
	storedThinks := false
	for n := len(in); ; n *= 2 {
		if !snap.Complete {
			var err error
			if stored, err = head(n); err != nil {
				return Merged{}, false, err
			}
		}
		vis = visible(stored)
		sv, storedThinks = thinOf(vis)
		if snap.Complete || len(stored) < n || len(sv.msgs) >= len(tin.msgs) {
			break
		}
	}
	if !inThinks && !storedThinks {
		return Merged{}, false, nil
	}
	p := 0
	for p < len(tin.msgs) && p < len(sv.msgs) && tin.msgs[p].Hash == sv.msgs[p].Hash {
		p++
	}
	if p < 2 || !hasAssistant(sv.msgs[1:p]) {
		return Merged{}, false, nil
	}
	seen := sv.at[p-1] + 1
	if p == len(sv.msgs) {
		seen = len(vis) // what the client left out at the end is the client's as well
	}
	return supersede(in[tin.at[p-1]+1:], snap, stored, seen), true, nil
}
