package history

import (
	"container/list"
	"context"
	"sync"
)

// Cache is a Store that keeps the newest messages of recently used
// conversations in memory, in front of another Store. Loading a hot
// conversation then costs a slice, not a walk through the database; every
// write still goes to the store first, so a crash loses nothing the store
// kept.
//
// The cache is write-through and coherent only while it is the store's
// sole writer, as Recall is for its Badger directory (one process per
// directory); a networked store shared by replicas must not be cached this
// way. Memory is bounded by maxBytes (message bytes, LRU), and one
// conversation never holds more than maxEntryBytes.
//
// Like Recall's pipeline, callers must not load and commit one
// conversation concurrently: a load that misses and a commit racing it
// could leave a stale entry.
type Cache struct {
	store    Store
	maxBytes int
	maxEntry int

	mu    sync.Mutex
	lru   list.List // of *cacheEntry, most recent first
	byKey map[Key]*list.Element
	size  int
}

var _ Store = (*Cache)(nil)

// cacheEntry is a conversation's metadata and the newest active messages,
// contiguous in the active sequence, oldest first.
type cacheEntry struct {
	key      Key
	meta     Meta
	tail     []Message
	complete bool // tail reaches back to the first active message
	bytes    int
}

// NewCache returns a Cache over s holding at most maxBytes of messages in
// all (default 64 MiB) and maxEntryBytes per conversation (default 2 MiB).
func NewCache(s Store, maxBytes, maxEntryBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if maxEntryBytes <= 0 {
		maxEntryBytes = 2 << 20
	}
	return &Cache{store: s, maxBytes: maxBytes, maxEntry: maxEntryBytes, byKey: make(map[Key]*list.Element)}
}

// Load serves q from memory when the cached tail answers it exactly as the
// store would, and otherwise loads from the store and keeps the result.
// The returned Tail must not be modified (appending to it is safe).
func (c *Cache) Load(ctx context.Context, k Key, q Query) (Snapshot, error) {
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		if snap, ok := el.Value.(*cacheEntry).serve(q); ok {
			c.mu.Unlock()
			return snap, nil
		}
	}
	c.mu.Unlock()

	snap, err := c.store.Load(ctx, k, q)
	if err != nil {
		return snap, err
	}
	c.mu.Lock()
	if el, ok := c.byKey[k]; !ok || el.Value.(*cacheEntry).meta.Version <= snap.Meta.Version {
		c.put(&cacheEntry{key: k, meta: snap.Meta, tail: snap.Tail[:len(snap.Tail):len(snap.Tail)], complete: snap.Complete})
	}
	c.mu.Unlock()
	return snap, nil
}

// serve runs the store's reading rule (see Query) over the cached tail. It
// fails when the store would read past the oldest cached message.
func (e *cacheEntry) serve(q Query) (Snapshot, bool) {
	var from uint64
	if q.FromCut {
		from = e.meta.Cut
	}
	enough := func(n, tokens, turns int, seq uint64) bool {
		return n >= q.MinMessages &&
			(tokens >= q.Tokens || (from > 0 && seq < from) || (q.MaxTurns > 0 && turns >= q.MaxTurns))
	}
	tail := e.tail
	var tokens, turns, n int
	for i := len(tail) - 1; i >= 0; i-- {
		m := &tail[i]
		if n > 0 && tail[i+1].Role == RoleUser && enough(n, tokens, turns, m.Seq) {
			return e.snapshot(tail[i+1:]), true
		}
		n++
		tokens += m.Tokens
		if m.Role == RoleUser {
			turns++
		}
	}
	// Every cached message was taken: the store would stop here only if
	// this is the whole history, or if the next older message (whose
	// sequence number is at most tail[0].Seq-1) would stop it.
	if e.complete || (n > 0 && tail[0].Role == RoleUser && enough(n, tokens, turns, tail[0].Seq-1)) {
		return e.snapshot(tail), true
	}
	return Snapshot{}, false
}

// snapshot returns tail as a Snapshot whose Tail reallocates on append.
func (e *cacheEntry) snapshot(tail []Message) Snapshot {
	return Snapshot{Meta: e.meta, Tail: tail[:len(tail):len(tail)], Complete: len(tail) >= e.meta.Messages}
}

// Commit writes through to the store, then applies the same change to the
// cached entry (or drops it when it cannot follow: a supersede, a conflict,
// an error).
func (c *Cache) Commit(ctx context.Context, k Key, ch Change) (Meta, error) {
	meta, err := c.store.Commit(ctx, k, ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return meta, err
	}
	e := el.Value.(*cacheEntry)
	if err != nil || ch.Supersede != nil || e.meta.Version != ch.Version {
		c.remove(el)
		return meta, err
	}
	next, writes := Apply(e.meta, ch, nil)
	if next.Version != meta.Version || next.NextSeq != meta.NextSeq {
		c.remove(el) // the store saw another state: never guess
		return meta, nil
	}
	// Snapshots handed out have their capacity clipped, so appending in
	// place never writes into a slice a reader holds.
	e.meta = meta
	e.tail = append(e.tail, writes...)
	added := 0
	for _, m := range writes {
		added += len(m.Raw) + messageOverhead
	}
	e.bytes += added
	c.size += added
	c.lru.MoveToFront(el)
	c.trim(e)
	c.evict()
	return meta, nil
}

// Messages reads from the store.
func (c *Cache) Messages(ctx context.Context, k Key, after uint64, all bool, fn func(Message) bool) error {
	return c.store.Messages(ctx, k, after, all, fn)
}

// Delete drops the entry and deletes from the store.
func (c *Cache) Delete(ctx context.Context, k Key) error {
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	c.mu.Unlock()
	return c.store.Delete(ctx, k)
}

// put inserts e (replacing any entry for its key), trims it and evicts
// the least recently used entries past maxBytes. c.mu must be held.
func (c *Cache) put(e *cacheEntry) {
	if el, ok := c.byKey[e.key]; ok {
		c.remove(el)
	}
	for _, m := range e.tail {
		e.bytes += len(m.Raw) + messageOverhead
	}
	c.byKey[e.key] = c.lru.PushFront(e)
	c.size += e.bytes
	c.trim(e)
	c.evict()
}

// trim drops e's messages before the cache-stable cut point (curation
// never sends them, and a load from the cut stops there just the same)
// and its oldest messages past maxEntry bytes, so an entry holds about one
// context window. c.mu must be held.
func (c *Cache) trim(e *cacheEntry) {
	drop, freed := 0, 0
	for drop < len(e.tail) && (e.bytes-freed > c.maxEntry || e.tail[drop].Seq < e.meta.Cut) {
		freed += len(e.tail[drop].Raw) + messageOverhead
		drop++
	}
	if drop > 0 {
		// Copy the rest: a subslice would keep the dropped messages'
		// bytes reachable through the backing array.
		e.tail = append([]Message(nil), e.tail[drop:]...)
		e.complete = false
		e.bytes -= freed
		c.size -= freed
	}
}

// evict drops least recently used entries while the cache is over
// maxBytes, keeping the newest. c.mu must be held.
func (c *Cache) evict() {
	for c.size > c.maxBytes && c.lru.Len() > 1 {
		c.remove(c.lru.Back())
	}
}

// remove drops an entry. c.mu must be held.
func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.byKey, e.key)
	c.size -= e.bytes
}

// messageOverhead approximates a cached Message's memory beside its Raw.
const messageOverhead = 96
