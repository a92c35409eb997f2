package badgerstore

import (
	"container/list"
	"slices"
	"sync"

	"github.com/recallproxy/recall/history"
)

// metaCache holds the metadata the committer last wrote, per
// conversation, so that its next commit of the conversation reads it
// without a Badger Get (which searches the memtables and every level's
// tables even for a key just written: a tenth of the proxy's CPU on a
// durable chat row went to reading metadata).
//
// The committer uses it, and exchange records' appends read the
// incarnation in it (exchanges.go). The committer is the one writer of
// metadata while the store is open, durable or relaxed: its groups, a
// Delete's first transaction and staged commits all run there. An entry is set after the transaction that wrote it committed,
// and dropped by whatever writes the metadata some other way: it never
// holds what Badger does not.
//
// The metadata read from the cache is not in the transaction's read set,
// so Badger no longer checks it for conflicts: nothing outside the
// committer writes it (see above), and the committer's own commits are
// ordered.
type metaCache struct {
	mu    sync.Mutex
	max   int // bytes (metaSize) the entries may hold
	size  int
	order *list.List // of *metaEntry, most recently used first
	byKey map[string]*list.Element
}

type metaEntry struct {
	prefix string
	m      history.Meta
	size   int
}

// metaCacheBytes bounds the metadata cached: thousands of conversations
// with summaries of a few kilobytes.
const metaCacheBytes = 16 << 20

func newMetaCache(maxBytes int) *metaCache {
	return &metaCache{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns a copy of the cached metadata under prefix (a history.Apply
// of it may change its slices in place).
func (c *metaCache) get(prefix []byte) (m history.Meta, ok bool) {
	ok = c.read(prefix, true, func(cached *history.Meta) { m = cloneMeta(*cached) })
	return m, ok
}

// incarnation returns the Incarnation of the metadata cached under
// prefix, without copying it.
func (c *metaCache) incarnation(prefix []byte) (inc uint64, ok bool) {
	ok = c.read(prefix, true, func(cached *history.Meta) { inc = cached.Incarnation })
	return inc, ok
}

// foldHead returns what a fold round needs of the metadata cached under
// prefix (its version, incarnation, next sequence number and gaps),
// without copying the rest, and leaves the entry where it is in the
// eviction order: the folder's reads say nothing of the committer's.
func (c *metaCache) foldHead(prefix []byte) (m history.Meta, ok bool) {
	ok = c.read(prefix, false, func(cached *history.Meta) {
		m = history.Meta{Version: cached.Version, Incarnation: cached.Incarnation, NextSeq: cached.NextSeq, Gaps: slices.Clone(cached.Gaps)}
	})
	return m, ok
}

// read calls fn with the metadata cached under prefix, if any, under the
// cache's lock (fn must not keep it), and moves the entry to the front
// of the eviction order when touch is set.
func (c *metaCache) read(prefix []byte, touch bool, fn func(*history.Meta)) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[string(prefix)]
	if !ok {
		return false
	}
	if touch {
		c.order.MoveToFront(e)
	}
	fn(&e.Value.(*metaEntry).m)
	return true
}

// put caches m, as written, under prefix, evicting the least recently
// used entries past the bound.
func (c *metaCache) put(prefix string, m history.Meta) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := metaSize(prefix, &m)
	if n > c.max {
		c.remove(prefix)
		return
	}
	if el, ok := c.byKey[prefix]; ok {
		e := el.Value.(*metaEntry)
		c.size += n - e.size
		e.m, e.size = cloneMeta(m), n
		c.order.MoveToFront(el)
	} else {
		c.byKey[prefix] = c.order.PushFront(&metaEntry{prefix: prefix, m: cloneMeta(m), size: n})
		c.size += n
	}
	for c.size > c.max {
		c.remove(c.order.Back().Value.(*metaEntry).prefix)
	}
}

// drop forgets what is cached under prefix.
func (c *metaCache) drop(prefix []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(string(prefix))
}

func (c *metaCache) remove(prefix string) {
	if e, ok := c.byKey[prefix]; ok {
		c.size -= e.Value.(*metaEntry).size
		c.order.Remove(e)
		delete(c.byKey, prefix)
	}
}

// metaSize is about what an entry holds in memory.
func metaSize(prefix string, m *history.Meta) int {
	n := 256 + 2*len(prefix) + len(m.Model) + len(m.ResponseID) + len(m.Title) + len(m.Metadata) +
		len(m.Gaps)*24 + len(m.Episodes)*64
	if m.Summary != nil {
		n += 64 + len(m.Summary.Text)
	}
	for _, e := range m.Episodes {
		n += len(e.Title)
	}
	return n
}

// cloneMeta copies what m shares through slices and pointers.
func cloneMeta(m history.Meta) history.Meta {
	m.Gaps = slices.Clone(m.Gaps)
	m.Episodes = slices.Clone(m.Episodes)
	if m.Summary != nil {
		s := *m.Summary
		m.Summary = &s
	}
	if m.Last != nil {
		l := *m.Last
		m.Last = &l
	}
	return m
}
