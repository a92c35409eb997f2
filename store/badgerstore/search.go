package badgerstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// Search ranks the active messages of a tenant, or of one conversation,
// against q.Text with BM25 (search).
//
// Each query term's postings are read from its segment keys
// (segment.go): every segment of the tenant, by prefix, or for one
// conversation the segments its span keys name, so the cost follows the
// postings of the query's terms in scope, not the scope's messages. Postings are checked against their
// conversation's metadata, read once per conversation: one with no
// metadata is deleted (or being deleted), a record at or past NextSeq is
// staged and not landed, an erased one waits for its deletion; none of
// those counts, and inactive ones count in the statistics but are never
// returned. Only the returned messages' records are read.
//
// The statistics: a conversation's are its totals key (moved by the
// folder, and by a hard forget). A tenant's are the sum over its totals
// keys, cached
// and recomputed once the store has seen more index changes since than a
// tenant of that size can absorb (an eighth of its messages): a scan of
// the tenant's listing keys amortised over as many commits, with no
// counter shared by every commit.
func (s *Store) Search(ctx context.Context, tenant string, q history.SearchQuery) ([]history.Hit, error) {
	terms := search.QueryTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	var hits []history.Hit
	post := s.genPost.Load() // before the snapshot (see tenantStats)
	err := s.db.View(func(txn *badger.Txn) error {
		// The segments, in the side database, from a snapshot taken after
		// the main one: postings at or past a watermark read here are
		// left out (the backlog's analysis covers those records).
		stxn := s.side.NewTransaction(false)
		defer stxn.Discard()
		r := &searchRun{ctx: ctx, txn: txn, stxn: stxn, tenant: tenant, q: q, convs: map[string]*searchConv{}, scoped: []byte(q.Conversation), key: make([]byte, 0, len(tenant)+16)}
		var dirty []*searchConv
		var ok bool
		var err error
		if q.Conversation != "" {
			ok, dirty, err = r.conversationScope()
		} else {
			ok = true
			dirty, err = r.tenantScope(s, post)
		}
		if err != nil || !ok {
			return err
		}
		pending, err := r.unindexed(dirty)
		if err != nil {
			return err
		}
		ranked, err := r.rank(terms, pending)
		if err != nil {
			return err
		}
		hits, err = r.read(search.Top(ranked, q.Limit))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: search %s: %w", tenant, err)
	}
	return hits, nil
}

// searchRun is one Search inside its transactions: txn on the main
// database, stxn on the side database's segments.
type searchRun struct {
	ctx    context.Context
	txn    *badger.Txn
	stxn   *badger.Txn
	tenant string
	q      history.SearchQuery
	convs  map[string]*searchConv // each conversation met, once
	st     search.Stats
	segs   []segment             // with q.Conversation: the segments holding its records
	tables map[uint64][]segEntry // the tenant's segments' tables, read once
	scoped []byte                // q.Conversation
	key    []byte                // room for a table's key
	buf    []byte
}

// searchConv is a conversation met by a search: its id (shared by its
// hits), metadata (nil: none) and totals.
type searchConv struct {
	id   string
	meta *history.Meta
	t    totals
}

// searchDoc is one message in a search's scope.
type searchDoc struct {
	conv *searchConv
	seq  uint64
}

// searchFound is one posting of a query term that counts.
type searchFound struct {
	searchDoc
	p      posting
	active bool
}

// pendingDoc is a record past its conversation's watermark, analysed
// by the search itself.
type pendingDoc struct {
	conv *searchConv
	backlogDoc
}

// lookup returns the conversation named id, reading its metadata and
// totals the first time.
func (r *searchRun) lookup(id []byte) (*searchConv, error) {
	if c, ok := r.convs[string(id)]; ok { // no allocation
		return c, nil
	}
	c := &searchConv{id: string(id)}
	k := history.Key{Tenant: r.tenant, Conversation: c.id}
	m, ok, err := readMetaHead(r.txn, convPrefix(k))
	if err != nil {
		return nil, err
	}
	if ok {
		if c.t, err = readTotals(r.txn, k); err != nil {
			return nil, err
		}
		c.meta = &m
	}
	r.convs[c.id] = c
	return c, nil
}

// conversationScope scopes the search to q.Conversation: its segments,
// its statistics, and itself as the conversation that may have records
// not indexed. ok is false when the conversation does not exist.
func (r *searchRun) conversationScope() (ok bool, dirty []*searchConv, err error) {
	c, err := r.lookup([]byte(r.q.Conversation))
	if err != nil || c.meta == nil {
		return false, nil, err
	}
	if r.segs, err = segmentsOf(r.stxn, history.Key{Tenant: r.tenant, Conversation: r.q.Conversation}); err != nil {
		return false, nil, err
	}
	r.st = search.Stats{Docs: c.t.docs, Terms: c.t.terms}
	return true, []*searchConv{c}, nil
}

// tenantScope scopes the search to the whole tenant: its statistics,
// and the conversations whose listing entry says they may have records
// not indexed (a scan of the tenant's entries).
func (r *searchRun) tenantScope(s *Store, post uint64) ([]*searchConv, error) {
	var err error
	if r.st, err = s.tenantStats(r.txn, r.tenant, post, s.genPre.Load()); err != nil {
		return nil, err
	}
	var out []*searchConv
	opts := badger.DefaultIteratorOptions
	opts.Prefix = listPrefix(r.tenant)
	it := r.txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		isDirty := false
		if err := item.Value(func(v []byte) error { isDirty = dirty(v); return nil }); err != nil {
			return nil, err
		}
		if !isDirty {
			continue
		}
		_, id := parseListKey(opts.Prefix, item.Key())
		c, err := r.lookup(id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// unindexed analyses the records past each watermark of the dirty
// conversations: they count in the statistics and are matched as
// postings would be.
func (r *searchRun) unindexed(dirty []*searchConv) ([]pendingDoc, error) {
	var pending []pendingDoc
	for _, c := range dirty {
		if c.meta == nil {
			continue
		}
		docs, err := backlog(r.txn, convPrefix(history.Key{Tenant: r.tenant, Conversation: c.id}), c.meta, c.t)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			pending = append(pending, pendingDoc{c, d})
			r.st.Docs++
			r.st.Terms += d.dl
		}
	}
	return pending, nil
}

// rank scores every active message in scope that holds a query term,
// summing each term's BM25 score per message.
func (r *searchRun) rank(terms []string, pending []pendingDoc) ([]search.Hit, error) {
	avg := r.st.AvgLen()
	index := map[searchDoc]int{} // into ranked
	var ranked []search.Hit
	var list []searchFound
	for _, term := range terms {
		var err error
		if list, err = r.postings(term, list[:0]); err != nil {
			return nil, err
		}
		for _, u := range pending {
			i, ok := slices.BinarySearchFunc(u.postings, term, func(p search.Posting, t string) int { return strings.Compare(p.Term, t) })
			if ok {
				list = append(list, searchFound{searchDoc{u.conv, u.seq}, posting{tf: u.postings[i].TF, dl: u.dl, created: u.created}, u.active})
			}
		}
		idf := search.IDF(r.st.Docs, len(list))
		for _, f := range list {
			if !f.active {
				continue
			}
			i, ok := index[f.searchDoc]
			if !ok {
				i = len(ranked)
				index[f.searchDoc] = i
				ranked = append(ranked, search.Hit{CreatedAt: f.p.created, Conversation: f.conv.id, Seq: f.seq})
			}
			ranked[i].Score += search.Score(idf, f.p.tf, f.p.dl, avg)
		}
	}
	return ranked, nil
}

// postings appends to list the indexed postings of term that count:
// those of a conversation that exists, landed, below its watermark (the
// backlog's records are matched apart) and not erased.
func (r *searchRun) postings(term string, list []searchFound) ([]searchFound, error) {
	err := r.termValues(term, func(seg segment, v []byte) error {
		err := eachGroup(v, func(g segGroup) error {
			id, base, err := r.groupConv(seg, g.conv)
			if err != nil || len(id) == 0 {
				return err // not in scope, or purged
			}
			c, err := r.lookup(id)
			if err != nil || c.meta == nil {
				return err // deleted: its purge is under way
			}
			from := c.t.from()
			g.each(base, func(p posting, seq uint64) {
				if seq >= c.meta.NextSeq || seq >= from {
					return // staged, or past the watermark (the backlog's)
				}
				flags := c.meta.FlagsAt(seq)
				if flags&history.Erased == 0 {
					list = append(list, searchFound{searchDoc{c, seq}, p, flags == 0})
				}
			})
			return nil
		})
		if err != nil {
			return fmt.Errorf("postings of %q: %w", term, err)
		}
		return r.ctx.Err()
	})
	return list, err
}

// groupConv returns the id and base of the conversation at index in
// segment seg's table: with q.Conversation, from the span seg is (and
// "" for another conversation's group), else from the table, read once a
// segment ("" for a conversation purged from the segment).
func (r *searchRun) groupConv(seg segment, index int) ([]byte, segBase, error) {
	if r.q.Conversation != "" {
		if index != seg.index {
			return nil, segBase{}, nil
		}
		return r.scoped, seg.base, nil
	}
	t, ok := r.tables[seg.id]
	if !ok {
		var err error
		if t, err = readSegTable(r.stxn, r.key, r.tenant, seg.id); err != nil {
			return nil, segBase{}, err
		}
		if r.tables == nil {
			r.tables = map[uint64][]segEntry{}
		}
		r.tables[seg.id] = t
	}
	if index >= len(t) {
		return nil, segBase{}, errBadSegment
	}
	return t[index].conv, t[index].base, nil
}

// termValues calls fn with each value holding term's postings in scope,
// and its segment: every segment of the tenant (only its id known), or,
// for one conversation, the segments its span keys name (a Get each: the
// cost follows the conversation, not the tenant). v is valid until fn
// returns.
func (r *searchRun) termValues(term string, fn func(seg segment, v []byte) error) error {
	if r.q.Conversation != "" {
		for _, sg := range r.segs {
			item, err := r.stxn.Get(segTermKey(r.tenant, term, sg.id))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if r.buf, err = item.ValueCopy(r.buf[:0]); err != nil {
				return err
			}
			if err := fn(sg, r.buf); err != nil {
				return err
			}
		}
		return nil
	}
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Prefix = segTermPrefix(r.tenant, term)
	it := r.stxn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		var err error
		if r.buf, err = it.Item().ValueCopy(r.buf[:0]); err != nil {
			return err
		}
		key := it.Item().Key()
		if err := fn(segment{id: binary.BigEndian.Uint64(key[len(key)-8:])}, r.buf); err != nil {
			return err
		}
	}
	return nil
}

// read reads the records of the top hits.
func (r *searchRun) read(top []search.Hit) ([]history.Hit, error) {
	var hits []history.Hit
	for _, h := range top {
		k := history.Key{Tenant: r.tenant, Conversation: h.Conversation}
		item, err := r.txn.Get(msgKey(convPrefix(k), h.Seq))
		if err != nil {
			return nil, err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		msg, err := history.DecodeMessage(v, h.Seq)
		if err != nil {
			return nil, err
		}
		hits = append(hits, history.Hit{Conversation: h.Conversation, Message: msg, Score: h.Score})
	}
	return hits, nil
}

// statsCache keeps tenants' search statistics.
type statsCache struct {
	mu      sync.Mutex
	tenants map[string]cachedStats
}

type cachedStats struct {
	stats search.Stats
	gen   uint64 // Store.genPost before the snapshot they were read from
}

// tenantStats returns the tenant's statistics, from the cache while fresh
// enough (see Search), else summed from its totals keys.
//
// Every change that adds or removes indexed records adds their number
// (a lot, for a removal) to genPre before it commits and to genPost after.
// post is genPost before txn's snapshot was taken: every change it counts
// is in the snapshot, so the statistics read from it are cached with it.
// pre is genPre after the snapshot was taken: it counts every change the
// snapshot holds. Cached statistics serve while pre exceeds their post by
// at most an eighth of them: the changes between are all they can miss.
func (s *Store) tenantStats(txn *badger.Txn, tenant string, post, pre uint64) (search.Stats, error) {
	s.stats.mu.Lock()
	c, ok := s.stats.tenants[tenant]
	s.stats.mu.Unlock()
	if ok && pre-c.gen <= uint64(c.stats.Docs/8) {
		return c.stats, nil
	}
	var st search.Stats
	opts := badger.DefaultIteratorOptions
	opts.Prefix = totalsPrefix(tenant)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		err := it.Item().Value(func(v []byte) error {
			t, _ := decodeTotals(v)
			st.Docs += t.docs
			st.Terms += t.terms
			return nil
		})
		if err != nil {
			return search.Stats{}, err
		}
	}
	s.stats.mu.Lock()
	if s.stats.tenants == nil {
		s.stats.tenants = map[string]cachedStats{}
	}
	s.stats.tenants[tenant] = cachedStats{stats: st, gen: post}
	s.stats.mu.Unlock()
	return st, nil
}
