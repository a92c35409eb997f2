package plan

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
)

// Inject returns the summary message: role (the client's first instruction
// message's, "system" when there is none) and SummaryPrefix plus text.
func Inject(role, text string) []byte {
	b := make([]byte, 0, len(text)+len(SummaryPrefix)+48)
	b = append(b, `{"role":`...)
	b = gjson.AppendJSONString(b, role)
	b = append(b, `,"content":"`...)
	b = append(b, escapedPrefix...)
	// The text is escaped after the prefix's escaped form: its opening
	// quote, which AppendJSONString writes, is dropped.
	at := len(b)
	b = gjson.AppendJSONString(b, text)
	b = append(b[:at], b[at+1:]...)
	return append(b, '}')
}

// escapedPrefix is SummaryPrefix as a JSON string's content.
var escapedPrefix = func() []byte {
	q := gjson.AppendJSONString(nil, SummaryPrefix)
	return q[1 : len(q)-1]
}()

// A conversation's summary changes seldom and is injected into every one
// of its requests: its message, escaped once, is kept in a small
// process-wide table of summaryMemoSlots entries and reused while the
// summary stays the same. The summary's identity is its version: the
// conversation (Key, and Meta.Incarnation, new each time the id is made
// again) and Meta.Summaries, which counts the summaries that landed in
// it, so that a new summary, rebuilt or imported, never shares one; its
// Through, At, length and the role are checked too. An erased summary
// (Meta.Summary nil) is not injected at all. Entries are immutable once
// published and replaced, not evicted: a slot holds the last summary
// that hashed to it. Messages over maxMemoBytes are made every time, so
// the table holds at most summaryMemoSlots × maxMemoBytes (a summary of
// summary.max_tokens' default 1,000 tokens is about 5 KB).
const (
	summaryMemoSlots = 1024 // a power of two
	maxMemoBytes     = 16 << 10
)

// summaryEntry is one summary's message and what identifies it.
type summaryEntry struct {
	key         history.Key
	incarnation uint64
	summaries   int
	through     uint64
	at          int64
	size        int
	role        string
	raw         []byte
}

var (
	summaryMemo [summaryMemoSlots]atomic.Pointer[summaryEntry]
	memoSeed    = maphash.MakeSeed()
)

// injected returns Inject(role, m.Summary.Text) for conversation k,
// whose metadata m is, from the memo when it holds that version of the
// summary. The bytes are shared: callers must not modify them.
func injected(k history.Key, m *history.Meta, role string) []byte {
	s := m.Summary
	slot := &summaryMemo[maphash.Comparable(memoSeed, k)&(summaryMemoSlots-1)]
	if e := slot.Load(); e != nil && e.incarnation == m.Incarnation && e.summaries == m.Summaries &&
		e.through == s.Through && e.at == s.At && e.size == len(s.Text) && e.role == role && e.key == k {
		return e.raw
	}
	raw := Inject(role, s.Text)
	raw = raw[:len(raw):len(raw)] // an append by a caller copies
	if len(raw) <= maxMemoBytes {
		slot.Store(&summaryEntry{key: k, incarnation: m.Incarnation, summaries: m.Summaries,
			through: s.Through, at: s.At, size: len(s.Text), role: role, raw: raw})
	}
	return raw
}
