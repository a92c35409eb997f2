package badgerstore

import (
	"context"
	"fmt"
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
// The statistics: a conversation's come from its listing entry (updated in
// every commit). A tenant's are the sum over its listing entries, cached
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
	err := s.db.View(func(txn *badger.Txn) error {
		metas := map[string]*history.Meta{} // nil: no metadata
		meta := func(conv string) (*history.Meta, error) {
			m, seen := metas[conv]
			if seen {
				return m, nil
			}
			mv, ok, err := readMeta(txn, convPrefix(history.Key{Tenant: tenant, Conversation: conv}))
			if err != nil {
				return nil, err
			}
			if ok {
				m = &mv
			}
			metas[conv] = m
			return m, nil
		}
		var st search.Stats
		if q.Conversation != "" {
			m, err := meta(q.Conversation)
			if err != nil || m == nil {
				return err
			}
			t, err := readTotals(txn, history.Key{Tenant: tenant, Conversation: q.Conversation}, m)
			if err != nil {
				return err
			}
			st = search.Stats{Docs: t.docs, Terms: t.terms}
		} else {
			var err error
			if st, err = s.tenantStats(txn, tenant); err != nil {
				return err
			}
		}
		avg := st.AvgLen()

		type doc struct {
			conv string
			seq  uint64
		}
		scores := map[doc]*search.Hit{}
		type found struct {
			doc
			p      posting
			active bool
		}
		var list []found
		for _, term := range terms {
			prefix := postingPrefix(tenant, term, "")
			seek := postingPrefix(tenant, term, q.Conversation)
			opts := badger.DefaultIteratorOptions
			opts.Prefix = seek
			opts.PrefetchValues = false
			list = list[:0]
			err := func() error {
				it := txn.NewIterator(opts)
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					item := it.Item()
					conv, seq, ok := parsePosting(prefix, item.Key())
					if !ok {
						continue
					}
					m, err := meta(string(conv))
					if err != nil {
						return err
					}
					if m == nil || seq >= m.NextSeq {
						continue
					}
					flags := m.FlagsAt(seq)
					if flags&history.Erased != 0 {
						continue
					}
					var p posting
					err = item.Value(func(v []byte) error {
						var ok bool
						if p, ok = decodePosting(v); !ok {
							return fmt.Errorf("bad posting for %q in %s", term, conv)
						}
						return nil
					})
					if err != nil {
						return err
					}
					list = append(list, found{doc{string(conv), seq}, p, flags == 0})
				}
				return ctx.Err()
			}()
			if err != nil {
				return err
			}
			idf := search.IDF(st.Docs, len(list))
			for _, f := range list {
				if !f.active {
					continue
				}
				h := scores[f.doc]
				if h == nil {
					h = &search.Hit{CreatedAt: f.p.created, Conversation: f.conv, Seq: f.seq}
					scores[f.doc] = h
				}
				h.Score += search.Score(idf, f.p.tf, f.p.dl, avg)
			}
		}
		ranked := make([]search.Hit, 0, len(scores))
		for _, h := range scores {
			ranked = append(ranked, *h)
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
	gen   uint64 // Store.gen when they were read
}

// tenantStats returns the tenant's statistics, from the cache while fresh
// enough (see Search), else summed from its listing entries.
func (s *Store) tenantStats(txn *badger.Txn, tenant string) (search.Stats, error) {
	gen := s.gen.Load()
	s.stats.mu.Lock()
	c, ok := s.stats.tenants[tenant]
	s.stats.mu.Unlock()
	if ok && gen-c.gen <= uint64(c.stats.Docs/8) {
		return c.stats, nil
	}
	var st search.Stats
	opts := badger.DefaultIteratorOptions
	opts.Prefix = listPrefix(tenant)
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		err := it.Item().Value(func(v []byte) error {
			t := decodeTotals(v)
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
	s.stats.tenants[tenant] = cachedStats{stats: st, gen: gen}
	s.stats.mu.Unlock()
	return st, nil
}
