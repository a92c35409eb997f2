package badgerstore

import (
	"sync"

	"github.com/recallproxy/recall/history"
)

// freshRecords holds the records the committer wrote that the folder has
// not indexed yet, per conversation, so that a fold round analyses them
// from memory instead of reading back from Badger what was just
// committed (a tenth of the proxy's CPU on a durable chat row). A
// conversation whose records past its watermark are not all here (a
// restart's backlog, one dropped past the bound) is read from Badger as
// before.
//
// Like metaCache, it is fed by the committer alone after
// a transaction committed, and mirrors what Badger holds: a record is
// here as last written, and a conversation is dropped by anything that
// removes or rewrites its records otherwise (a Delete, a hard forget, a
// staged commit, a failed transaction). The messages' Raw are shared with
// the committed change, which no one changes after the commit.
type freshRecords struct {
	mu    sync.Mutex
	max   int // bytes (freshSize) the records may hold
	size  int
	convs map[history.Key]*freshConv
}

// freshConv is a conversation's records with sequence numbers first,
// first+1, ... (msgs[i].Seq == msgs[0].Seq+i), of one incarnation.
type freshConv struct {
	incarnation uint64
	msgs        []history.Message
	size        int
}

// freshBytes bounds the records held: a few times Options.IndexBacklog's
// default of chat messages.
const freshBytes = 32 << 20

func newFreshRecords(maxBytes int) *freshRecords {
	return &freshRecords{max: maxBytes, convs: map[history.Key]*freshConv{}}
}

func freshSize(m *history.Message) int { return 160 + len(m.Raw) + len(m.Role) }

// add records writes, committed to k's conversation of the given
// incarnation.
func (f *freshRecords) add(k history.Key, incarnation uint64, writes []history.Message) {
	if f == nil || len(writes) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.convs[k]
	if c == nil || c.incarnation != incarnation {
		f.dropLocked(k)
		c = &freshConv{incarnation: incarnation}
		f.convs[k] = c
	}
	for i := range writes {
		w := &writes[i]
		n := len(c.msgs)
		switch {
		case n > 0 && w.Seq >= c.msgs[0].Seq && w.Seq < c.msgs[0].Seq+uint64(n):
			// A record rewritten (a supersede's flags).
			old := &c.msgs[w.Seq-c.msgs[0].Seq]
			c.grow(f, freshSize(w)-freshSize(old))
			*old = *w
		case n > 0 && w.Seq < c.msgs[0].Seq:
			// Before what is held: not needed, and not held.
		default:
			if n > 0 && w.Seq != c.msgs[0].Seq+uint64(n) {
				// Not next to what is held: start again from it.
				c.grow(f, -c.size)
				c.msgs = c.msgs[:0]
			}
			c.msgs = append(c.msgs, *w)
			c.grow(f, freshSize(w))
		}
	}
	if f.size > f.max {
		f.dropLocked(k) // the folder reads it from Badger
	}
}

func (c *freshConv) grow(f *freshRecords, n int) {
	c.size += n
	f.size += n
}

// take returns a copy of k's records with from <= Seq < next, of the
// given incarnation, if every one of them is held.
func (f *freshRecords) take(k history.Key, incarnation, from, next uint64) ([]history.Message, bool) {
	if f == nil {
		return nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if from >= next {
		return nil, true
	}
	c := f.convs[k]
	if c == nil || c.incarnation != incarnation || len(c.msgs) == 0 {
		return nil, false
	}
	first := c.msgs[0].Seq
	if from < first || next > first+uint64(len(c.msgs)) {
		return nil, false
	}
	return append([]history.Message(nil), c.msgs[from-first:next-first]...), true
}

// trim forgets k's records before upto: they are indexed.
func (f *freshRecords) trim(k history.Key, upto uint64) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.convs[k]
	if c == nil {
		return
	}
	i := 0
	for i < len(c.msgs) && c.msgs[i].Seq < upto {
		c.grow(f, -freshSize(&c.msgs[i]))
		i++
	}
	if i == len(c.msgs) {
		f.dropLocked(k)
		return
	}
	// To the front: appends then reuse the array instead of growing a
	// new one as the held window moves on.
	n := copy(c.msgs, c.msgs[i:])
	clear(c.msgs[n:]) // no trimmed record's bytes stay reachable
	c.msgs = c.msgs[:n]
}

// drop forgets k's records.
func (f *freshRecords) drop(k history.Key) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropLocked(k)
}

func (f *freshRecords) dropLocked(k history.Key) {
	if c := f.convs[k]; c != nil {
		f.size -= c.size
		delete(f.convs, k)
	}
}
