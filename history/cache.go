package history

import (
	"cmp"
	"container/list"
	"context"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/recallproxy/recall/wire"
)

// Cache is a Store that keeps the newest messages of recently used
// conversations in memory, in front of another Store. Loading a hot
// conversation then costs a slice, not a walk through the database; every
// write still goes to the store first, so a crash loses nothing the store
// kept.
//
// The cache is write-through. It is coherent while it is the store's sole
// writer, as Recall is for its Badger directory (one process per
// directory). A store that other processes write too (replicas sharing a
// database) implements HeadReader: the cache then serves a conversation
// from memory only after a read of its head finds it unchanged, or finds
// that another process only appended to it and the entry caught up with
// those messages, except while the store reports this process its only
// writer (SoleWriter). Memory is bounded by maxBytes (LRU), counting each entry at its
// cost: a fixed overhead for the entry, its map slot, list element and
// metadata, plus its messages; one conversation never holds more than
// maxEntryBytes of messages. A conversation the store does not hold is
// never cached, so loading unknown ids costs no memory.
//
// Like Recall's pipeline, callers must not load and commit one
// conversation concurrently: a load that misses and a commit racing it
// could leave a stale entry.
type Cache struct {
	store    Store
	heads    HeadReader // nil: this process is the store's only writer
	follower Follower   // nil: a head moved on is followed by a Load
	sole     SoleWriter // nil: heads are read before every hit
	kept     KeptWriter // nil: no conversation is trusted alone
	leaser   ExchangeLeaser
	maxBytes int
	maxEntry int

	mu    sync.Mutex
	lru   list.List // of *cacheEntry, most recent first
	byKey map[Key]*list.Element
	size  int
	// deletes counts finished Deletes: a Load that read the store before
	// one finished does not cache what it read (it may be the deleted
	// conversation).
	deletes uint64
}

var (
	_ Store  = (*Cache)(nil)
	_ Leaser = (*Cache)(nil)
)

// HeadReader is implemented by stores that several processes write: it
// reads a conversation's head, far cheaper than its tail.
type HeadReader interface {
	// Head returns the conversation's head as stored now (the zero Head
	// for a conversation never written).
	Head(ctx context.Context, k Key) (Head, error)
}

// SoleWriter is implemented by a HeadReader store that knows when this
// process is the only one writing it. While Sole reports ok, the cache
// serves a conversation it has read or written in the same epoch without
// reading its head: nobody else can have changed it. A new epoch begins
// each time the process becomes the only writer again (others may have
// written meanwhile), so each entry's head is read once more first.
type SoleWriter interface {
	// Sole reports whether this process is the store's only writer now,
	// and the epoch of that state (never 0 when ok).
	Sole() (epoch uint64, ok bool)
}

// KeptWriter is implemented by a SoleWriter store whose process may be
// one conversation's only writer while others write the store: it kept
// the conversation's lease after its last exchange, and every other
// process writes the conversation only under that lease (see
// ExchangeLease). While SoleFor reports ok, the cache serves k as it
// would in a SoleWriter epoch. Each keeping is an epoch of its own,
// never one Sole reports.
type KeptWriter interface {
	// SoleFor reports whether this process is k's only writer now, and
	// the epoch of that state (never 0 when ok).
	SoleFor(k Key) (epoch uint64, ok bool)
}

// Follower is implemented by a HeadReader store that reads, in one round
// trip, a conversation's head and, when it is not the one a cache holds,
// what another process added to it since.
type Follower interface {
	// Follow returns k's head as stored now. Unless that head is the
	// same as h (Same), it also returns, read in the same snapshot, what
	// Load would with Query{After: after, Tokens: math.MaxInt}: the
	// metadata and the active messages past after, oldest first, though
	// possibly not all of them (the caller counts). A conversation not
	// stored has the zero Head and a Snapshot with zero Meta. lease, if
	// set, is taken by the read as Load takes Query.Lease.
	Follow(ctx context.Context, k Key, h Head, after uint64, lease *ExchangeLease) (Head, *Snapshot, error)
}

// Head identifies the state of a conversation's metadata: every commit
// bumps Version except a summary landing, which bumps Summaries, and a
// conversation deleted and made again has another Incarnation (its
// Version and Summaries may come back to the same values).
type Head struct {
	Version     uint64
	Summaries   int
	Incarnation uint64
}

// HeadOf returns m's head.
func HeadOf(m *Meta) Head {
	return Head{Version: m.Version, Summaries: m.Summaries, Incarnation: m.Incarnation}
}

// Same reports whether h and o are the same state of the metadata.
func (h Head) Same(o Head) bool { return h == o }

// cacheEntry is a conversation's metadata and the newest active messages,
// contiguous in the active sequence, oldest first.
type cacheEntry struct {
	key      Key
	meta     Meta
	tail     []Message
	complete bool // tail reaches back to the first active message
	// epoch is the SoleWriter epoch in which the entry was last read,
	// written or checked against the stored head; 0 if none.
	epoch uint64
	bytes int // fixedCost plus each message's messageCost, plus slack
	// arena is the chunk the next messages' text is copied into (see
	// keep); slack counts the bytes of the entry's chunks that hold no
	// cached message's text: room left, separators, text dropped.
	arena []byte
	slack int
}

// NewCache returns a Cache over s holding at most maxBytes in all, entries
// counted at their cost (default 64 MiB), and maxEntryBytes of messages
// per conversation (default 2 MiB).
func NewCache(s Store, maxBytes, maxEntryBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if maxEntryBytes <= 0 {
		maxEntryBytes = 2 << 20
	}
	c := &Cache{store: s, maxBytes: maxBytes, maxEntry: maxEntryBytes, byKey: make(map[Key]*list.Element)}
	c.heads, _ = s.(HeadReader)
	if c.heads != nil {
		c.sole, _ = s.(SoleWriter)
		c.kept, _ = s.(KeptWriter)
		c.follower, _ = s.(Follower)
	}
	if c.follower != nil {
		// A store's reads take an exchange's lease through Load and
		// Follow: without Follow, a head read would not.
		c.leaser, _ = s.(ExchangeLeaser)
	}
	return c
}

// epoch returns the epoch in which this process is k's only writer now:
// the store's (SoleWriter), else k's alone (KeptWriter); 0 when it is
// not.
func (c *Cache) epoch(k Key) uint64 {
	if c.sole == nil {
		return 0
	}
	if e, ok := c.sole.Sole(); ok {
		return e
	}
	if c.kept != nil {
		if e, ok := c.kept.SoleFor(k); ok {
			return e
		}
	}
	return 0
}

// Load serves q from memory when the cached tail answers it exactly as the
// store would, and otherwise loads from the store and keeps the result.
// Over a HeadReader, a cached conversation is first checked against the
// stored head; not while the store reports this process its only writer
// (SoleWriter) and the entry was read, written or checked in the same
// epoch. If another process wrote it, the entry catches up by reading
// only the messages after its newest one, when that process only
// appended (appendedTo), and is dropped otherwise. The returned Tail must
// not be modified (appending to it is safe).
//
// q.Lease, over a store that takes it (ExchangeLeaser), is taken first:
// in memory while the store is its only writer, else by the store's read
// (the head read, or the Load of a conversation not cached), never from
// memory alone. Over any other store it is left alone.
func (c *Cache) Load(ctx context.Context, k Key, q Query) (Snapshot, error) {
	lease := q.Lease
	if lease == nil || c.leaser == nil || lease.Held() {
		lease = nil // nothing to take
	} else if c.leaser.HoldLease(k, lease) {
		lease = nil // held in memory: before the epoch is read, so that
		// the epoch being the entry's means nobody wrote since.
	}
	// The epoch is read before the store: what is read after it is
	// current for as long as the epoch lasts.
	epoch := c.epoch(k)
	if lease != nil {
		epoch = 0 // the lease comes with a read of the store
	}
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok && c.heads != nil && (epoch == 0 || el.Value.(*cacheEntry).epoch != epoch) {
		if err := c.check(ctx, k, el, lease, epoch); err != nil {
			c.mu.Unlock()
			return Snapshot{}, err
		}
	}
	if el, ok := c.byKey[k]; ok && (lease == nil || lease.Held()) {
		c.lru.MoveToFront(el)
		if snap, ok := el.Value.(*cacheEntry).serve(q); ok {
			c.mu.Unlock()
			return snap, nil
		}
	}
	deletes := c.deletes
	c.mu.Unlock()

	snap, err := c.store.Load(ctx, k, q)
	if err != nil || snap.Meta.Version == 0 {
		// A conversation the store does not hold is not cached: any
		// client can name ids that were never written, and each would
		// keep an entry. The commit that creates it may cache it.
		return snap, err
	}
	c.mu.Lock()
	if c.deletes != deletes {
		c.mu.Unlock()
		return snap, nil
	}
	if el, ok := c.byKey[k]; !ok || el.Value.(*cacheEntry).meta.Version <= snap.Meta.Version {
		learnAll(snap.Tail)
		c.put(&cacheEntry{key: k, meta: snap.Meta, tail: snap.Tail[:len(snap.Tail):len(snap.Tail)], complete: snap.Complete, epoch: epoch})
	}
	c.mu.Unlock()
	return snap, nil
}

// check brings el, k's entry, up to k's stored head: unchanged, caught up
// with what another process appended (appendedTo), or dropped. lease, if
// set, is taken by the read (see since). c.mu is held on entry and on
// return, and let go while the store is read.
func (c *Cache) check(ctx context.Context, k Key, el *list.Element, lease *ExchangeLease, epoch uint64) error {
	cachedMeta := el.Value.(*cacheEntry).meta
	cached := HeadOf(&cachedMeta)
	c.mu.Unlock()
	head, added, err := c.since(ctx, k, cached, cachedMeta.NextSeq-1, lease)
	c.mu.Lock()
	if err != nil {
		return err
	}
	if el, ok := c.byKey[k]; ok {
		e := el.Value.(*cacheEntry)
		switch {
		case !HeadOf(&e.meta).Same(cached):
			c.remove(el)
		case head.Same(cached):
			e.epoch = epoch
		case added != nil && appendedTo(&cachedMeta, added):
			c.advance(el, added.Meta, added.Tail, epoch)
		default:
			c.remove(el)
		}
	}
	return nil
}

// since reads k's head and, if another process (a replica) moved it on
// from cached, what it added after the entry's newest message (after):
// in one read from a Follower, which takes lease too, else a head read,
// then a Load of the messages past after when the head moved under the
// same incarnation. added is nil when the head did not move.
func (c *Cache) since(ctx context.Context, k Key, cached Head, after uint64, lease *ExchangeLease) (head Head, added *Snapshot, err error) {
	if c.follower != nil {
		return c.follower.Follow(ctx, k, cached, after, lease)
	}
	if head, err = c.heads.Head(ctx, k); err != nil || head.Same(cached) || head.Incarnation != cached.Incarnation || head.Version < cached.Version {
		return head, nil, err
	}
	snap, err := c.store.Load(ctx, k, Query{After: after, Tokens: math.MaxInt})
	if err != nil {
		return Head{}, nil, err
	}
	return head, &snap, nil
}

// serve runs the store's reading rule (see Query) over the cached tail. It
// fails when the store would read past the oldest cached message.
func (e *cacheEntry) serve(q Query) (Snapshot, bool) {
	q = q.Resolve(&e.meta)
	tail := e.tail
	var tokens, turns, n int
	for i := len(tail) - 1; i >= 0; i-- {
		m := &tail[i]
		oldest := ""
		if n > 0 {
			oldest = tail[i+1].Role
		}
		if q.Done(n, tokens, turns, oldest, m.Seq, e.meta.Cut) {
			return e.snapshot(tail[i+1:]), true
		}
		n++
		tokens += m.Tokens
		if m.Role == wire.RoleUser {
			turns++
		}
	}
	// Every cached message was taken: the store would stop here only if
	// this is the whole history, or if the next older message (whose
	// sequence number is at most tail[0].Seq-1) would stop it.
	if e.complete || (n > 0 && q.Done(n, tokens, turns, tail[0].Role, tail[0].Seq-1, e.meta.Cut)) {
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
// an error). A commit that creates the conversation caches it whole; a
// summary landing on the state the entry holds keeps it.
func (c *Cache) Commit(ctx context.Context, k Key, ch Change) (Meta, error) {
	epoch := c.epoch(k) // before the store, as in Load
	leased := ch.Lease.Held()
	meta, err := c.store.Commit(ctx, k, ch)
	if epoch == 0 && leased && err == nil && c.kept != nil {
		// The commit kept the exchange's lease, held since before it:
		// nobody else wrote since, and nobody will while it is kept.
		if e, ok := c.kept.SoleFor(k); ok {
			epoch = e
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		if err == nil && ch.Version == 0 && ch.Supersede == nil && ch.Forget == nil && !ch.Import {
			// The store held nothing (the commit would have conflicted
			// otherwise), so the appended messages are all there is.
			if next, writes := Apply(Meta{}, ch, nil); next.Version == meta.Version && next.NextSeq == meta.NextSeq {
				c.put(&cacheEntry{key: k, meta: meta, tail: writes[:len(writes):len(writes)], complete: true, epoch: epoch})
			}
		}
		return meta, err
	}
	e := el.Value.(*cacheEntry)
	if err == nil && ch.onlySummary() {
		// A summary landing is checked against the stored summary, not
		// Version (the job's change names none), and changes no message:
		// the entry stays if the store landed it on the state the entry
		// holds, as its result shows (the same Version and Incarnation,
		// one summary more).
		if h := HeadOf(&e.meta); h.Version == meta.Version && h.Incarnation == meta.Incarnation && h.Summaries+1 == meta.Summaries {
			added := metaCost(meta) - metaCost(e.meta)
			e.meta, e.epoch = meta, epoch
			e.bytes += added
			c.size += added
			c.lru.MoveToFront(el)
			c.evict()
		} else {
			c.remove(el)
		}
		return meta, nil
	}
	if err != nil || ch.Supersede != nil || ch.Forget != nil || ch.Import || e.meta.Version != ch.Version {
		c.remove(el)
		return meta, err
	}
	next, writes := Apply(e.meta, ch, nil)
	if next.Version != meta.Version || next.NextSeq != meta.NextSeq {
		c.remove(el) // the store saw another state: never guess
		return meta, nil
	}
	// The store applied the change to the head the entry holds: the
	// entry is what the store holds now.
	c.advance(el, meta, writes, epoch)
	return meta, nil
}

// advance makes el's entry the conversation as meta describes it: the
// messages it holds, then appended. c.mu must be held.
func (c *Cache) advance(el *list.Element, meta Meta, appended []Message, epoch uint64) {
	e := el.Value.(*cacheEntry)
	// Snapshots handed out have their capacity clipped, so appending in
	// place never writes into a slice a reader holds.
	added := metaCost(meta) - metaCost(e.meta)
	e.meta, e.epoch = meta, epoch
	learnAll(appended)
	e.tail = append(e.tail, appended...)
	// The appended elements lie past every snapshot's length.
	added += e.keep(e.tail[len(e.tail)-len(appended):])
	for _, m := range appended {
		added += messageCost(m)
	}
	e.bytes += added
	c.size += added
	c.lru.MoveToFront(el)
	c.trim(e)
	c.evict()
}

// appendedTo reports whether snap, read after the newest message m
// describes, is that conversation with messages appended and none of the
// others changed: the same incarnation, no change since that took
// messages out of every context (Epoch counts supersedes and forgets,
// after which the entry could hold what is no longer there, erased text
// included), and every message appended since, in order. Its metadata
// may have moved otherwise (a summary, the cut, the counters).
func appendedTo(m *Meta, snap *Snapshot) bool {
	n := &snap.Meta
	if n.Incarnation != m.Incarnation || n.Epoch != m.Epoch || n.Version < m.Version || n.NextSeq < m.NextSeq ||
		uint64(len(snap.Tail)) != n.NextSeq-m.NextSeq || n.Messages-m.Messages != len(snap.Tail) {
		return false
	}
	for i := range snap.Tail {
		if snap.Tail[i].Seq != m.NextSeq+uint64(i) {
			return false
		}
	}
	return true
}

// Acquire takes the store's lease on name if the store is a Leaser (a
// store replicas share). Otherwise the store has a single process, whose
// own locks serialise its work, and the lease is held at once.
func (c *Cache) Acquire(ctx context.Context, name string) (release func(), err error) {
	if l, ok := c.store.(Leaser); ok {
		return l.Acquire(ctx, name)
	}
	return noRelease, ctx.Err()
}

// TryAcquire is Acquire without waiting (see Leaser).
func (c *Cache) TryAcquire(ctx context.Context, name string) (release func(), ok bool, err error) {
	if l, ok := c.store.(Leaser); ok {
		return l.TryAcquire(ctx, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	return noRelease, true, nil
}

func noRelease() {}

// Messages reads the active messages after after from the cached entry
// when it holds every one of them and is current: over a store of one
// process, or the store's sole writer with the entry current in this
// epoch (as Load serves it), at no read; over a store other processes
// write that follows their writes (Follower), once the entry was brought
// up to the stored head in one read (as Load does), which costs a read
// of the head where the messages' read would read them all. Otherwise,
// and for every message (all: the inactive ones are not cached), it
// reads the store. A summary job reads its turns here, moments after the
// request that triggered it left them in the entry.
func (c *Cache) Messages(ctx context.Context, k Key, after uint64, all bool, fn func(Message) bool) error {
	if !all {
		tail, ok, err := c.cachedAfter(ctx, k, after)
		if err != nil {
			return err
		}
		if ok {
			for i := range tail {
				if ctx.Err() != nil || !fn(tail[i]) {
					break
				}
			}
			return ctx.Err()
		}
	}
	return c.store.Messages(ctx, k, after, all, fn)
}

// cachedAfter returns k's cached active messages after after, if the entry
// is current (or, over a Follower, brought up to the stored head) and
// holds them all.
func (c *Cache) cachedAfter(ctx context.Context, k Key, after uint64) ([]Message, bool, error) {
	epoch := c.epoch(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		return nil, false, nil
	}
	if c.heads != nil && (epoch == 0 || el.Value.(*cacheEntry).epoch != epoch) {
		if c.follower == nil {
			return nil, false, nil
		}
		if err := c.check(ctx, k, el, nil, epoch); err != nil {
			return nil, false, err
		}
		if el, ok = c.byKey[k]; !ok {
			return nil, false, nil // dropped: the store's read
		}
	}
	e := el.Value.(*cacheEntry)
	tail := e.tail
	if !e.complete && (len(tail) == 0 || tail[0].Seq > after+1) {
		return nil, false, nil // older active messages may not be cached
	}
	i, _ := slices.BinarySearchFunc(tail, after+1, func(m Message, seq uint64) int { return cmp.Compare(m.Seq, seq) })
	// Clipped: the entry appends in place.
	return tail[i:len(tail):len(tail)], true, nil
}

// List reads from the store.
func (c *Cache) List(ctx context.Context, tenant string, q ListQuery) ([]Entry, bool, error) {
	return c.store.List(ctx, tenant, q)
}

// Search reads from the store.
func (c *Cache) Search(ctx context.Context, tenant string, q SearchQuery) ([]Hit, error) {
	return c.store.Search(ctx, tenant, q)
}

// Namespaces reads through to the store.
func (c *Cache) Namespaces(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	return c.store.Namespaces(ctx, prefix, after, limit)
}

// AppendExchangeBatch writes through to the store, in one write if it can.
func (c *Cache) AppendExchangeBatch(ctx context.Context, batch []KeyedExchanges) error {
	if b, ok := c.store.(ExchangeBatcher); ok {
		return b.AppendExchangeBatch(ctx, batch)
	}
	for _, e := range batch {
		if err := c.store.AppendExchanges(ctx, e.Key, e.Records); err != nil {
			return err
		}
	}
	return nil
}

// AppendExchanges writes through to the store: records are not cached.
func (c *Cache) AppendExchanges(ctx context.Context, k Key, recs []ExchangeRecord) error {
	return c.store.AppendExchanges(ctx, k, recs)
}

// Exchanges reads from the store.
func (c *Cache) Exchanges(ctx context.Context, k Key, before string, limit int) ([]ExchangeRecord, error) {
	return c.store.Exchanges(ctx, k, before, limit)
}

// Delete drops the entry and deletes from the store, then drops the entry
// again: a Load that read the conversation before the store deleted it
// may have cached it meanwhile (and a Load still under way will not).
func (c *Cache) Delete(ctx context.Context, k Key) error {
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	c.mu.Unlock()
	err := c.store.Delete(ctx, k)
	c.mu.Lock()
	c.deletes++
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	c.mu.Unlock()
	return err
}

// Len returns the number of conversations cached. It is meant for tests
// and metrics: the answer may be stale as soon as it is returned.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// put inserts e (replacing any entry for its key), trims it and evicts
// the least recently used entries past maxBytes. c.mu must be held.
func (c *Cache) put(e *cacheEntry) {
	if el, ok := c.byKey[e.key]; ok {
		c.remove(el)
	}
	// The tail may be a snapshot's too: its text moves into the arena
	// in an array of the entry's own.
	e.tail = slices.Clone(e.tail)
	e.bytes = e.fixedCost() + e.keep(e.tail)
	for _, m := range e.tail {
		e.bytes += messageCost(m)
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
	drop, freed, raw := 0, 0, 0
	for drop < len(e.tail) && (e.messageBytes()-freed > c.maxEntry || e.tail[drop].Seq < e.meta.Cut) {
		freed += messageCost(e.tail[drop])
		raw += len(e.tail[drop].Raw)
		drop++
	}
	if drop > 0 {
		// Copy the rest: a subslice would keep the dropped messages'
		// bytes reachable through the backing array. Their text stays
		// in the arena's chunks until dropped compacts them.
		e.tail = append([]Message(nil), e.tail[drop:]...)
		e.complete = false
		freed -= e.dropped(raw)
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

// The cost model. An entry costs entryOverhead, its key's bytes, the
// variable part of its Meta, and each message's Raw plus messageOverhead.
// Without the fixed part, an entry holding no messages (a conversation
// whose messages were all superseded) would cost nothing and never be
// evicted.
const (
	// entryOverhead approximates an entry's memory beside its key's bytes,
	// its Meta's slices and strings, and its messages: the cacheEntry
	// (Meta included), its list.Element, and its map slot (key and
	// element pointer) counted twice for the map's spare capacity.
	entryOverhead = int(unsafe.Sizeof(cacheEntry{}) + unsafe.Sizeof(list.Element{}) +
		2*(unsafe.Sizeof(Key{})+unsafe.Sizeof((*list.Element)(nil))))
	// messageOverhead approximates a cached Message's memory beside its
	// Raw.
	messageOverhead = int(unsafe.Sizeof(Message{}))
)

// fixedCost is what e counts against the cache's bound besides its
// messages.
func (e *cacheEntry) fixedCost() int {
	return entryOverhead + len(e.key.Tenant) + len(e.key.Conversation) + metaCost(e.meta)
}

// metaCost is the memory a Meta holds outside its struct.
func metaCost(m Meta) int {
	return len(m.Gaps)*int(unsafe.Sizeof(Range{})) + len(m.Model) + len(m.ResponseID)
}

// messageCost is what a cached message counts against the cache's bounds.
func messageCost(m Message) int { return len(m.Raw) + len(m.Response) + messageOverhead }

// messageBytes is the part of e.bytes its messages account for, which
// maxEntry bounds.
func (e *cacheEntry) messageBytes() int { return e.bytes - e.fixedCost() - e.slack }
