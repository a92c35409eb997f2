package history

import (
	"slices"
	"sync"

	"github.com/recallproxy/recall/wire"
)

// Repair makes msgs valid for the strictest provider, in the sent copy
// only: every tool result must directly follow (with its siblings) the call
// group that asked for it, and every tool call must have a result before
// the next message that is not a result. A call group is an assistant
// message with calls, or, in a protocol that stores calls as items (see
// wire.Codec.Itemized), a run of assistant messages from one. Orphan and
// duplicate results are dropped; unanswered calls are removed from their
// message, which is dropped if nothing remains. count recomputes the
// tokens of a rewritten message (nil keeps the old count). It returns the
// repaired messages and how many calls and results it removed.
func Repair(msgs []Message, count func(*Message) int) ([]Message, int) {
	if !needsRepair(msgs) {
		return msgs, 0
	}
	out := make([]Message, 0, len(msgs))
	repaired := 0
	for i := 0; i < len(msgs); {
		m := msgs[i]
		i++
		switch {
		case answers(&m):
			// Results with no call group right before them. A user
			// message keeps what else it says.
			repaired += max(1, len(results(nil, &m)))
			if m.Role == wire.RoleUser {
				if e, ok := edit(m, func(string) bool { return false }, count); ok {
					out = append(out, e)
				}
			}
			continue
		case !hasCalls(&m):
			out = append(out, m)
			continue
		}
		group := []Message{m}
		for itemized(&m) && i < len(msgs) && msgs[i].Role == wire.RoleAssistant {
			group = append(group, msgs[i])
			i++
		}
		var asked []string
		for k := range group {
			asked = calls(asked, &group[k])
		}
		answered := make(map[string]bool, len(asked))
		var res []Message
		for i < len(msgs) && answers(&msgs[i]) {
			r := msgs[i]
			i++
			ids := results(nil, &r)
			good := make(map[string]bool, len(ids))
			for _, id := range ids {
				if answered[id] || !slices.Contains(asked, id) {
					repaired++
					continue
				}
				answered[id], good[id] = true, true
			}
			if len(good) < len(ids) {
				var ok bool
				if r, ok = edit(r, func(id string) bool {
					keep := good[id]
					delete(good, id) // a second result for the id goes
					return keep
				}, count); !ok {
					continue
				}
			}
			res = append(res, r)
			if r.Role == wire.RoleUser { // it answers, and says more: the group ends
				break
			}
		}
		for _, g := range group {
			n := len(calls(nil, &g))
			if n == 0 {
				out = append(out, g)
				continue
			}
			kept := 0
			for _, id := range calls(nil, &g) {
				if answered[id] {
					kept++
				}
			}
			if kept < n {
				repaired += n - kept
				var ok bool
				if g, ok = edit(g, func(id string) bool { return answered[id] }, count); !ok {
					continue
				}
			}
			out = append(out, g)
		}
		out = append(out, res...)
	}
	return out, repaired
}

// needsRepair is the fast path: a scan that allocates nothing when every
// call is answered in place (its id buffers come from a pool: a buffer
// handed to a codec through its interface escapes).
func needsRepair(msgs []Message) bool {
	pb, rb := idBufs.Get().(*[]string), idBufs.Get().(*[]string)
	defer putIDs(pb)
	defer putIDs(rb)
	pending := (*pb)[:0]
	defer func() { *pb = pending }()
	answering := false // results of the open group have started
	for k := range msgs {
		m := &msgs[k]
		if answers(m) {
			*rb = results((*rb)[:0], m)
			for _, id := range *rb {
				j := slices.Index(pending, id)
				if j < 0 {
					return true
				}
				pending = slices.Delete(pending, j, j+1)
			}
			answering = true
			if m.Role == wire.RoleUser { // the group ends with it
				if len(pending) > 0 {
					return true
				}
				answering = false
			}
			continue
		}
		if m.Role != wire.RoleAssistant {
			if len(pending) > 0 {
				return true
			}
			answering = false
			continue
		}
		if len(pending) > 0 && (answering || !itemized(m)) {
			return true
		}
		answering = false
		pending = calls(pending, m) // opens a group, or goes on with one
	}
	return len(pending) > 0
}

// idBufs holds the id buffers of needsRepair.
var idBufs = sync.Pool{New: func() any { b := make([]string, 0, 16); return &b }}

// putIDs returns a buffer to idBufs, cleared: its ids alias messages.
func putIDs(b *[]string) {
	clear((*b)[:cap(*b)])
	*b = (*b)[:0]
	idBufs.Put(b)
}

// edit keeps only the calls and results of m that keep accepts. It reports
// false if the message has nothing left to say.
func edit(m Message, keep func(id string) bool, count func(*Message) int) (Message, bool) {
	raw, ok := m.Codec().KeepCalls(m.Raw, keep)
	if !ok {
		return m, false
	}
	m.Raw = raw
	if count != nil {
		m.Tokens = count(&m)
	}
	return m, true
}
