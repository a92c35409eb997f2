package plan

import (
	"hash/maphash"
	"math/rand/v2"
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
// process-wide table and reused while the summary stays the same. The
// summary's identity is its version: the conversation (Key, and
// Meta.Incarnation, new each time the id is made again) and
// Meta.Summaries, which counts the summaries that landed in it, so that
// a new summary, rebuilt or imported, never shares one; its Through, At,
// length and the role are checked too. An erased summary (Meta.Summary
// nil) is not injected at all. Entries are immutable once published.
//
// The table is memoSets sets of memoWays entries, a conversation's set
// chosen by its key's hash: direct-mapped, a thousand conversations in
// as many slots shared them about six times in ten, and two
// conversations taking turns in a slot escaped their summaries on every
// request. A conversation's new summary replaces its old one's entry; a
// full set gives up one of its ways at random. Messages over
// maxMemoBytes are made every time, and entries stop being added while
// the table holds maxMemoTotal bytes (a summary of summary.max_tokens'
// default 1,000 tokens is about 5 KB).
const (
	memoSets     = 1024 // a power of two
	memoWays     = 4
	maxMemoBytes = 16 << 10
	maxMemoTotal = 16 << 20
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

// is reports whether e is the message of conversation k's summary as m
// holds it, with role.
func (e *summaryEntry) is(k history.Key, m *history.Meta, role string) bool {
	s := m.Summary
	return e.incarnation == m.Incarnation && e.summaries == m.Summaries && e.through == s.Through &&
		e.at == s.At && e.size == len(s.Text) && e.role == role && e.key == k
}

var (
	summaryMemo [memoSets][memoWays]atomic.Pointer[summaryEntry]
	memoBytes   atomic.Int64 // the bytes of the table's entries' messages
	memoSeed    = maphash.MakeSeed()
)

// memoSet returns conversation k's set of the table.
func memoSet(k history.Key) *[memoWays]atomic.Pointer[summaryEntry] {
	return &summaryMemo[maphash.Comparable(memoSeed, k)&(memoSets-1)]
}

// injected returns Inject(role, m.Summary.Text) for conversation k,
// whose metadata m is, from the memo when it holds that version of the
// summary. The bytes are shared: callers must not modify them.
func injected(k history.Key, m *history.Meta, role string) []byte {
	set := memoSet(k)
	way := -1 // the way to keep the message in: k's own, else a free one
	for i := range set {
		switch e := set[i].Load(); {
		case e == nil:
			if way < 0 {
				way = i
			}
		case e.key == k:
			if e.is(k, m, role) {
				return e.raw
			}
			way = i
		}
	}
	s := m.Summary
	raw := Inject(role, s.Text)
	raw = raw[:len(raw):len(raw)] // an append by a caller copies
	if len(raw) > maxMemoBytes || memoBytes.Load()+int64(len(raw)) > maxMemoTotal {
		return raw
	}
	if way < 0 {
		way = rand.IntN(memoWays)
	}
	old := set[way].Swap(&summaryEntry{key: k, incarnation: m.Incarnation, summaries: m.Summaries,
		through: s.Through, at: s.At, size: len(s.Text), role: role, raw: raw})
	grown := int64(len(raw))
	if old != nil {
		grown -= int64(len(old.raw))
	}
	memoBytes.Add(grown)
	return raw
}
