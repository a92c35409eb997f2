package badgerstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/search"
)

// Search ranks the active messages of a tenant, or of one conversation,
// against q.Text with BM25 (history/search).
//
// Each query term's postings are read by prefix (term, then
// conversation), so the cost follows the postings of the query's terms,
// not the tenant's messages. Postings are checked against their
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
		if q.Conversation != "" {
			// One conversation's records are read and analysed: its
			// size bounds the cost, not the tenant's postings.
			var err error
			hits, err = searchConversation(ctx, txn, history.Key{Tenant: tenant, Conversation: q.Conversation}, terms, q.Limit)
			return err
		}
		var st search.Stats
		var dirtyConvs []*conv // conversations with records not indexed yet
		{
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
			opts.Prefix = segTermPrefix(tenant, term)
			list = list[:0]
			err := func() error {
				it := txn.NewIterator(opts)
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					var err error
					if buf, err = it.Item().ValueCopy(buf[:0]); err != nil {
						return err
					}
					err = eachGroup(buf, func(g segGroup) error {
						c, err := lookup(g.conv)
						if err != nil || c.meta == nil {
							return err // deleted: its purge is under way
						}
						g.each(func(p posting, seq uint64) {
							if seq >= c.meta.NextSeq {
								return // staged
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
				}
				return ctx.Err()
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

// searchConversation ranks k's active messages against terms with BM25,
// by analysing every record: the statistics are the conversation's (every
// record not erased counts, active or not, as in Search).
func searchConversation(ctx context.Context, txn *badger.Txn, k history.Key, terms []string, limit int) ([]history.Hit, error) {
	prefix := convPrefix(k)
	m, ok, err := readMetaHead(txn, prefix)
	if err != nil || !ok {
		return nil, err
	}
	type doc struct {
		msg history.Message
		tf  []int // per query term
		dl  int
	}
	var docs []doc
	var st search.Stats
	df := make([]int, len(terms))
	err = iterate(txn, prefix, &m, 0, func(msg history.Message) bool {
		postings, dl := search.Analyze(msg.Raw)
		st.Docs++
		st.Terms += dl
		var tf []int
		for i, term := range terms {
			j, ok := slices.BinarySearchFunc(postings, term, func(p search.Posting, t string) int { return strings.Compare(p.Term, t) })
			if !ok {
				continue
			}
			if tf == nil {
				tf = make([]int, len(terms))
			}
			tf[i] = postings[j].TF
			df[i]++
		}
		if tf != nil && msg.Active() {
			docs = append(docs, doc{msg, tf, dl})
		}
		return ctx.Err() == nil
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	avg := st.AvgLen()
	idf := make([]float64, len(terms))
	for i := range terms {
		idf[i] = search.IDF(st.Docs, df[i])
	}
	ranked := make([]search.Hit, len(docs))
	for i, d := range docs {
		ranked[i] = search.Hit{CreatedAt: d.msg.CreatedAt.UnixNano(), Conversation: k.Conversation, Seq: d.msg.Seq}
		for j, tf := range d.tf {
			if tf > 0 {
				ranked[i].Score += search.Score(idf[j], tf, d.dl, avg)
			}
		}
	}
	bySeq := make(map[uint64]*history.Message, len(docs))
	for i := range docs {
		bySeq[docs[i].msg.Seq] = &docs[i].msg
	}
	var hits []history.Hit
	for _, h := range search.Top(ranked, limit) {
		hits = append(hits, history.Hit{Conversation: k.Conversation, Message: *bySeq[h.Seq], Score: h.Score})
	}
	return hits, nil
}
