package badgerstore

import (
	"context"
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
// counter shared by every commit (relaxed mode commits conversations
// concurrently, and a shared key would make them conflict).
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
		// left out (the backlog's analysis below covers those records).
		stxn := s.side.NewTransaction(false)
		defer stxn.Discard()
		// Each conversation met, once: its id (shared by its hits) and
		// metadata (nil: none).
		type conv struct {
			id   string
			meta *history.Meta
			t    totals
		}
		convs := map[string]*conv{}
		lookup := func(id []byte) (*conv, error) {
			if c, ok := convs[string(id)]; ok { // no allocation
				return c, nil
			}
			c := &conv{id: string(id)}
			k := history.Key{Tenant: tenant, Conversation: c.id}
			m, ok, err := readMetaHead(txn, convPrefix(k))
			if err != nil {
				return nil, err
			}
			if ok {
				if c.t, err = readTotals(txn, k); err != nil {
					return nil, err
				}
				c.meta = &m
			}
			convs[c.id] = c
			return c, nil
		}
		var st search.Stats
		var dirtyConvs []*conv // conversations with records not indexed yet
		var segs []segment     // with q.Conversation: the segments holding its records
		if q.Conversation != "" {
			c, err := lookup([]byte(q.Conversation))
			if err != nil || c.meta == nil {
				return err
			}
			if segs, err = segmentsOf(stxn, history.Key{Tenant: tenant, Conversation: q.Conversation}); err != nil {
				return err
			}
			st = search.Stats{Docs: c.t.docs, Terms: c.t.terms}
			dirtyConvs = append(dirtyConvs, c)
		} else {
			var err error
			if st, err = s.tenantStats(txn, tenant, post, s.genPre.Load()); err != nil {
				return err
			}
			// The conversations whose listing entry says they may have
			// records not indexed: a scan of the tenant's entries.
			opts := badger.DefaultIteratorOptions
			opts.Prefix = listPrefix(tenant)
			it := txn.NewIterator(opts)
			for it.Rewind(); it.Valid(); it.Next() {
				item := it.Item()
				isDirty := false
				if err := item.Value(func(v []byte) error { isDirty = dirty(v); return nil }); err != nil {
					it.Close()
					return err
				}
				if !isDirty {
					continue
				}
				_, id := parseListKey(opts.Prefix, item.Key())
				c, err := lookup(id)
				if err != nil {
					it.Close()
					return err
				}
				dirtyConvs = append(dirtyConvs, c)
			}
			it.Close()
		}
		// The records past each watermark, analysed here: they count in
		// the statistics and are matched as postings would be.
		type unindexed struct {
			conv *conv
			backlogDoc
		}
		var pending []unindexed
		for _, c := range dirtyConvs {
			if c.meta == nil {
				continue
			}
			docs, err := backlog(txn, convPrefix(history.Key{Tenant: tenant, Conversation: c.id}), c.meta, c.t)
			if err != nil {
				return err
			}
			for _, d := range docs {
				pending = append(pending, unindexed{c, d})
				st.Docs++
				st.Terms += d.dl
			}
		}
		avg := st.AvgLen()

		type doc struct {
			conv *conv
			seq  uint64
		}
		type found struct {
			doc
			p      posting
			active bool
		}
		index := map[doc]int{} // into ranked
		var ranked []search.Hit
		var list []found
		var buf []byte
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		for _, term := range terms {
			list = list[:0]
			// Each value holding the term's postings in scope: every
			// segment of the tenant, or, for one conversation, the
			// segments its span keys name (a Get each: the cost follows
			// the conversation, not the tenant).
			values := func(fn func(v []byte) error) error {
				if q.Conversation != "" {
					for _, sg := range segs {
						item, err := stxn.Get(segTermKey(tenant, term, sg.id))
						if errors.Is(err, badger.ErrKeyNotFound) {
							continue
						}
						if err != nil {
							return err
						}
						if buf, err = item.ValueCopy(buf[:0]); err != nil {
							return err
						}
						if err := fn(buf); err != nil {
							return err
						}
					}
					return nil
				}
				opts.Prefix = segTermPrefix(tenant, term)
				it := stxn.NewIterator(opts)
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					var err error
					if buf, err = it.Item().ValueCopy(buf[:0]); err != nil {
						return err
					}
					if err := fn(buf); err != nil {
						return err
					}
				}
				return nil
			}
			err := func() error {
				return values(func(v []byte) error {
					err := eachGroup(v, func(g segGroup) error {
						if q.Conversation != "" && string(g.conv) != q.Conversation {
							return nil
						}
						c, err := lookup(g.conv)
						if err != nil || c.meta == nil {
							return err // deleted: its purge is under way
						}
						from := c.t.from()
						g.each(func(p posting, seq uint64) {
							if seq >= c.meta.NextSeq || seq >= from {
								return // staged, or past the watermark (the backlog's)
							}
							flags := c.meta.FlagsAt(seq)
							if flags&history.Erased == 0 {
								list = append(list, found{doc{c, seq}, p, flags == 0})
							}
						})
						return nil
					})
					if err != nil {
						return fmt.Errorf("postings of %q: %w", term, err)
					}
					return ctx.Err()
				})
			}()
			if err != nil {
				return err
			}
			for _, u := range pending {
				i, ok := slices.BinarySearchFunc(u.postings, term, func(p search.Posting, t string) int { return strings.Compare(p.Term, t) })
				if ok {
					list = append(list, found{doc{u.conv, u.seq}, posting{tf: u.postings[i].TF, dl: u.dl, created: u.created}, u.active})
				}
			}
			idf := search.IDF(st.Docs, len(list))
			for _, f := range list {
				if !f.active {
					continue
				}
				i, ok := index[f.doc]
				if !ok {
					i = len(ranked)
					index[f.doc] = i
					ranked = append(ranked, search.Hit{CreatedAt: f.p.created, Conversation: f.conv.id, Seq: f.seq})
				}
				ranked[i].Score += search.Score(idf, f.p.tf, f.p.dl, avg)
			}
		}
		for _, h := range search.Top(ranked, q.Limit) {
			k := history.Key{Tenant: tenant, Conversation: h.Conversation}
			item, err := txn.Get(msgKey(convPrefix(k), h.Seq))
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			msg, err := history.DecodeMessage(v, h.Seq)
			if err != nil {
				return err
			}
			hits = append(hits, history.Hit{Conversation: h.Conversation, Message: msg, Score: h.Score})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badgerstore: search %s: %w", tenant, err)
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
