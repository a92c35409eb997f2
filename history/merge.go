package history

import (
	"fmt"
	"slices"

	"github.com/recallproxy/recall/wire"
)

// Mode selects how a request's messages are merged with the stored history.
type Mode string

// Merge modes: how a request's messages meet the stored history (the
// X-Recall-History header, or the tenant's history.mode).
const (
	// Auto drops the longest overlap between the start of the incoming
	// messages and the end of the stored history, and treats a resend from
	// the first message that diverges after a shared assistant message as
	// an edit.
	Auto Mode = "auto"
	// Append treats every incoming message as new.
	Append Mode = "append"
	// Sync takes the client's messages as the truth: the common prefix is
	// kept and the rest of storage superseded.
	Sync Mode = "sync"
	// Off neither injects nor records.
	Off Mode = "off"
)

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Append, Sync, Off:
		return m, nil
	}
	return "", fmt.Errorf("history: unknown mode %q (want auto, append, sync or off)", s)
}

// Merged is the outcome of a merge.
type Merged struct {
	// History is the stored active history the context is built from, oldest
	// first (after any supersede).
	History []Message
	// New are the incoming messages that are not yet stored, in order.
	New []Message
	// Supersede, if set, is the boundary after which stored messages are
	// superseded when the turn commits.
	Supersede *Boundary
	// Preamble, if set, is the conversation's stored preamble (its first
	// message, as read), which the request repeats as its first message:
	// that copy is not in New, it is stored once. Curation may leave the
	// stored one out of History (a summary covers it, the cache-stable
	// cut passed it, the budget dropped it); the caller then sends it
	// first all the same, as the agent meant it to be sent with every
	// request.
	Preamble *Message
}

// HeadFunc reads the first n active messages of the conversation, oldest
// first. The merge calls it only when a client resends from the start and
// the loaded tail does not reach back that far.
type HeadFunc func(n int) ([]Message, error)

// Merge works out which of the incoming messages in are new, given the
// snapshot a Store loaded with Query.MinMessages >= len(in). Only the
// messages' Hash and Role are read. Cost follows len(in) and the snapshot,
// never the stored history.
//
// In Auto, the longest overlap of in's start with the stored end is known;
// failing that, messages that begin with the conversation's first message,
// are more than one, share a stored assistant message after it and then
// diverge are an edit or a regeneration: the stored rest is superseded.
// Anything else is new.
func Merge(mode Mode, in []Message, snap Snapshot, head HeadFunc) (Merged, error) {
	switch mode {
	case Append, Off:
		return Merged{History: snap.Tail, New: in}, nil
	case Sync:
		return resync(in, snap, head)
	}
	head = memoHead(head)
	m, err := mergeAuto(in, snap, head)
	if err != nil || !hasAssistant(m.New) {
		return m, err
	}
	// The client sent something the model said as new: perhaps a stored
	// answer resent without its thinking or reasoning (merge_thinking.go).
	if t, ok, err := mergeThinking(in, snap, head); err != nil {
		return Merged{}, err
	} else if ok && len(t.New) < len(m.New) {
		if len(t.New) < len(in) {
			t.Preamble = m.Preamble
		}
		return t, nil
	}
	return m, nil
}

// mergeAuto is Merge in Auto, comparing messages as they were sent.
func mergeAuto(in []Message, snap Snapshot, head HeadFunc) (Merged, error) {
	tail := snap.Tail
	if j := overlap(in, visible(tail)); j > 0 {
		return Merged{History: tail, New: in[j:]}, nil
	}
	// A resend from the first message that diverges is an edit or a
	// regeneration only with evidence that the client resends: a stored
	// assistant message it shares after the first message. An agent
	// restarted with the same opening message (or a title call that
	// repeats it) shares nothing the model said: its messages are new, and
	// memory carries over. The opening message is never the evidence,
	// whatever its role: it is what a restarted client repeats.
	if len(in) > 1 && snap.Meta.Messages > 0 && in[0].Hash == snap.Meta.FirstHash &&
		hasAssistant(in[1:]) {
		stored, p, err := commonPrefix(in, snap, head)
		if err != nil {
			return Merged{}, err
		}
		if p > 1 && hasAssistant(visible(stored)[1:p]) {
			return supersede(in[p:], snap, stored, p), nil
		}
	}
	if pre, err := RepeatedPreamble(in, snap, head); err != nil {
		return Merged{}, err
	} else if pre != nil {
		// What follows the preamble may be what the stored end already
		// holds: an agent's next request in its turn (a tool round) resends
		// the turn's prompt and call after its preamble.
		in = in[1:]
		if j := overlap(in, visible(tail)); j > 0 {
			return Merged{History: tail, New: in[j:], Preamble: pre}, nil
		}
		return Merged{History: tail, New: in, Preamble: pre}, nil
	}
	return Merged{History: tail, New: in}, nil
}

// RepeatedPreamble returns the conversation's first stored message if in
// opens with it as a preamble: a user message that another user message
// follows unanswered, as Codex opens every process with its
// <environment_context> item, while the stored one was a preamble too (a
// user message follows it). nil otherwise. A restarted agent's preamble
// identical to the stored one is kept once, not stored again as a turn
// of its own in every process: whether or not a summary covers the stored
// one or the cache-stable cut passed it, the caller sends it first in the
// context (Merged.Preamble), as the agent sends it with every request. It
// reads the conversation's first two messages (head) only when in could
// be such a resend and snap does not hold them.
func RepeatedPreamble(in []Message, snap Snapshot, head HeadFunc) (*Message, error) {
	if len(in) < 2 || snap.Meta.Messages < 2 || in[0].Hash != snap.Meta.FirstHash ||
		in[0].Role != wire.RoleUser || in[1].Role != wire.RoleUser {
		return nil, nil
	}
	first := snap.Tail
	if !snap.Complete || len(first) < 2 {
		var err error
		if first, err = head(2); err != nil {
			return nil, err
		}
	}
	if len(first) < 2 || first[0].Hash != in[0].Hash || first[1].Role != wire.RoleUser {
		return nil, nil
	}
	pre := first[0]
	return &pre, nil
}

// hasAssistant reports whether msgs hold a message of the model. A loop,
// not slices.ContainsFunc, which would copy each message to test it.
func hasAssistant(msgs []Message) bool {
	for i := range msgs {
		if msgs[i].Role == wire.RoleAssistant {
			return true
		}
	}
	return false
}

// memoHead returns head answering a read of no more messages than its
// last one read (or than the conversation holds) from that read.
func memoHead(head HeadFunc) HeadFunc {
	var last []Message
	asked := -1
	return func(n int) ([]Message, error) {
		if asked >= 0 && (n <= len(last) || len(last) < asked) {
			return last[:min(n, len(last))], nil
		}
		got, err := head(n)
		if err != nil {
			return nil, err
		}
		last, asked = got, n
		return got, nil
	}
}

// resync keeps the common prefix of in and the stored history and
// supersedes the stored rest.
func resync(in []Message, snap Snapshot, head HeadFunc) (Merged, error) {
	stored, p, err := commonPrefix(in, snap, head)
	if err != nil {
		return Merged{}, err
	}
	return supersede(in[p:], snap, stored, p), nil
}

// commonPrefix returns the first active messages of the conversation (at
// least as many the client could have seen as in holds, if it has them)
// and the length p of their common prefix with in, counted in messages
// the client saw: Recall's internal messages (its history tools' rounds)
// are skipped in the comparison. It reads them with head unless snap is
// complete.
func commonPrefix(in []Message, snap Snapshot, head HeadFunc) (stored []Message, p int, err error) {
	stored = snap.Tail
	if !snap.Complete {
		n := len(in)
		for {
			if stored, err = head(n); err != nil {
				return nil, 0, err
			}
			if len(stored) < n || len(visible(stored)) >= len(in) {
				break
			}
			n *= 2
		}
	}
	vis := visible(stored)
	for p < len(in) && p < len(vis) && in[p].Hash == vis[p].Hash {
		p++
	}
	return stored, p, nil
}

// supersede keeps the stored messages up to the p-th the client saw (the
// common prefix with what it sent) and the internal ones right after it
// (the results of its Recall tool calls), and supersedes the stored rest;
// news are the client's messages after the common prefix.
func supersede(news []Message, snap Snapshot, stored []Message, p int) Merged {
	kept := keep(stored, p)
	m := Merged{History: stored[:kept], New: news}
	if kept < snap.Meta.Messages {
		b := &Boundary{}
		if kept > 0 {
			b.Seq, b.Turn = stored[kept-1].Seq, stored[kept-1].Turn
		}
		m.Supersede = b
	}
	return m
}

// keep returns how many of stored a supersede keeps: up to the p-th the
// client saw, and the internal ones right after it.
func keep(stored []Message, p int) int {
	kept := 0
	for seen := 0; seen < p; kept++ {
		if stored[kept].Flags&Internal == 0 {
			seen++
		}
	}
	for p > 0 && kept < len(stored) && stored[kept].Flags&Internal != 0 {
		kept++
	}
	return kept
}

// visible returns msgs without Recall's internal messages, which the
// client never saw and so never resends (msgs itself when there are none).
func visible(msgs []Message) []Message {
	i := 0 // a loop, not slices.IndexFunc, which copies each message to test it
	for i < len(msgs) && msgs[i].Flags&Internal == 0 {
		i++
	}
	if i == len(msgs) {
		return msgs
	}
	out := slices.Clip(msgs[:i:i])
	out = append([]Message(nil), out...)
	for _, m := range msgs[i:] {
		if m.Flags&Internal == 0 {
			out = append(out, m)
		}
	}
	return out
}

// overlap returns the length of the longest prefix of in that is a suffix
// of tail, comparing hashes (Knuth-Morris-Pratt: linear in both).
func overlap(in, tail []Message) int {
	if len(in) == 0 || len(tail) == 0 {
		return 0
	}
	if len(tail) > len(in) {
		tail = tail[len(tail)-len(in):] // a longer overlap is impossible
	}
	fail := make([]int, len(in))
	for i, k := 1, 0; i < len(in); i++ {
		for k > 0 && in[i].Hash != in[k].Hash {
			k = fail[k-1]
		}
		if in[i].Hash == in[k].Hash {
			k++
		}
		fail[i] = k
	}
	q := 0
	for i := range tail {
		h := tail[i].Hash
		for q > 0 && (q == len(in) || h != in[q].Hash) {
			q = fail[q-1]
		}
		if h == in[q].Hash {
			q++
		}
	}
	return q
}
