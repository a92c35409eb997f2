package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// Postings are kept in segments, as a search engine keeps them: each fold
// (fold.go) indexes the records of many conversations at once and writes,
// per tenant and distinct term, one key holding every posting of that
// term in the batch:
//
//	i \x00 tenant \x00 term \x00 segment(8, BE)        postings of the term in the segment
//	f \x00 tenant \x00 conversation \x00 segment(8, BE) first, last seq of the conversation's records in it
//
// One key per posting (term, conversation, seq) made the index five to
// ten Badger entries per stored byte of prose: at full load the memtable
// flushes and compactions it caused took the proxy's core from the
// requests. A segment key holds thousands of postings, and its value,
// past the value threshold, goes to the value log.
//
// A term's value is a run of groups, one per conversation:
//
//	uvarint len(conversation), conversation, uvarint n,
//	n × (uvarint seq delta, uvarint tf, uvarint dl, varint created delta)
//
// seq and created (Unix nanoseconds) are deltas from the group's previous
// posting (from 0 for the first). The f keys let a purge (pending.go)
// find the segments holding a record without reading any other.

// segPosting is one posting while a segment is built.
type segPosting struct {
	conv      int // into segBuilder.convs
	seq       uint64
	tf, dl    int
	createdNs int64
}

// segBuilder gathers the postings of one tenant's records in a fold.
//
// Postings go to one slice, each term's linked through next in the order
// they were added (by conversation, then seq), not to a slice per term: a
// fold of a few hundred messages then allocates as its one slice grows,
// not once or more per distinct term of every message.
type segBuilder struct {
	convs    []string
	ranges   [][2]uint64 // per conversation: first and last seq indexed here
	terms    map[string]segChain
	postings []chainedPosting
	docs     int
}

// segChain is a term's postings in segBuilder.postings: the indexes of the
// first and last.
type segChain struct{ first, last int32 }

// chainedPosting is a posting and the index of its term's next one (0:
// none, as the first posting of the slice is never a next).
type chainedPosting struct {
	segPosting
	next int32
}

// takeBuilder returns an empty builder, one a fold round gave back if
// there is one (the caller holds foldMu).
func (s *Store) takeBuilder() *segBuilder {
	n := len(s.foldBuilders)
	if n == 0 {
		return &segBuilder{}
	}
	b := s.foldBuilders[n-1]
	s.foldBuilders[n-1] = nil
	s.foldBuilders = s.foldBuilders[:n-1]
	return b
}

// reset empties b for another round, keeping its room, and drops what
// it held of the round's messages (the terms and conversations).
func (b *segBuilder) reset() {
	clear(b.convs)
	b.convs = b.convs[:0]
	b.ranges = b.ranges[:0]
	clear(b.terms)
	b.postings = b.postings[:0]
	b.docs = 0
}

// add indexes message m of conversation conv (the last one added, or a
// new one) and returns its length in terms.
func (b *segBuilder) add(conv string, m *history.Message) int {
	if b.terms == nil {
		b.terms = map[string]segChain{}
	}
	i := len(b.convs) - 1
	if i < 0 || b.convs[i] != conv {
		b.convs = append(b.convs, conv)
		b.ranges = append(b.ranges, [2]uint64{m.Seq, m.Seq})
		i++
	}
	b.ranges[i][1] = m.Seq
	created := m.CreatedAt.UnixNano()
	// The message's postings are those past start: a term whose chain
	// ends there is one the message holds already. No sort, as
	// search.Analyze makes, to count each term: it was a fifth of a round.
	start := int32(len(b.postings))
	distinct := 0
	dl := search.EachTerm(m.Text(), func(t string) {
		c, ok := b.terms[t]
		if ok && c.last >= start {
			b.postings[c.last].tf++
			return
		}
		if distinct == search.MaxPostings {
			return
		}
		distinct++
		at := int32(len(b.postings))
		b.postings = append(b.postings, chainedPosting{segPosting: segPosting{conv: i, seq: m.Seq, tf: 1, createdNs: created}})
		if ok {
			b.postings[c.last].next = at
			b.terms[t] = segChain{c.first, at}
		} else {
			b.terms[t] = segChain{at, at}
		}
	})
	for j := range b.postings[start:] {
		b.postings[int(start)+j].dl = dl
	}
	b.docs++
	return dl
}

// write sets the segment's keys in txn.
func (b *segBuilder) write(txn setter, tenant string, seg uint64) error {
	terms := make([]string, 0, len(b.terms))
	for t := range b.terms {
		terms = append(terms, t)
	}
	slices.Sort(terms) // keys in order: cheaper for the memtable
	// The keys and values are cut from one buffer, not allocated two a
	// term: each is taken once written, so a buffer that grows leaves
	// those taken where they were, intact.
	buf := make([]byte, 0, len(terms)*(len(tenant)+24)+len(b.postings)*8+len(b.convs)*16)
	var ps []segPosting
	for _, term := range terms {
		ps = ps[:0]
		for i := b.terms[term].first; ; {
			ps = append(ps, b.postings[i].segPosting)
			if i = b.postings[i].next; i == 0 {
				break
			}
		}
		k := len(buf)
		buf = appendPair(buf, 'i', tenant, term)
		buf = binary.BigEndian.AppendUint64(buf, seg)
		v := len(buf)
		buf = encodeSegPostings(buf, b.convs, ps)
		if err := txn.Set(buf[k:v:v], buf[v:len(buf):len(buf)]); err != nil {
			return err
		}
	}
	for i, conv := range b.convs {
		v := binary.AppendUvarint(nil, b.ranges[i][0])
		v = binary.AppendUvarint(v, b.ranges[i][1])
		if err := txn.Set(segConvKey(history.Key{Tenant: tenant, Conversation: conv}, seg), v); err != nil {
			return err
		}
	}
	return nil
}

// encodeSegPostings appends the groups of ps (ordered by conversation,
// then seq) to dst.
func encodeSegPostings(dst []byte, convs []string, ps []segPosting) []byte {
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].conv == ps[i].conv {
			j++
		}
		conv := convs[ps[i].conv]
		dst = binary.AppendUvarint(dst, uint64(len(conv)))
		dst = append(dst, conv...)
		dst = binary.AppendUvarint(dst, uint64(j-i))
		var seq uint64
		var created int64
		for _, p := range ps[i:j] {
			dst = binary.AppendUvarint(dst, p.seq-seq)
			dst = binary.AppendUvarint(dst, uint64(p.tf))
			dst = binary.AppendUvarint(dst, uint64(p.dl))
			dst = binary.AppendVarint(dst, p.createdNs-created)
			seq, created = p.seq, p.createdNs
		}
		i = j
	}
	return dst
}

var errBadSegment = errors.New("badgerstore: bad segment postings")

// segGroup is one conversation's postings in a term's value, undecoded.
type segGroup struct {
	conv []byte
	n    int
	body []byte // n postings
	raw  []byte // the whole group, header included
}

// nextGroup splits the first group off v.
func nextGroup(v []byte) (g segGroup, rest []byte, err error) {
	start := v
	l, w := binary.Uvarint(v)
	if w <= 0 || l > uint64(len(v)-w) {
		return g, nil, errBadSegment
	}
	g.conv, v = v[w:w+int(l)], v[w+int(l):]
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)) {
		return g, nil, errBadSegment
	}
	g.n, v = int(n), v[w:]
	body := v
	for range g.n {
		for range 3 {
			_, w := binary.Uvarint(v)
			if w <= 0 {
				return g, nil, errBadSegment
			}
			v = v[w:]
		}
		_, w := binary.Varint(v)
		if w <= 0 {
			return g, nil, errBadSegment
		}
		v = v[w:]
	}
	g.body = body[:len(body)-len(v)]
	g.raw = start[:len(start)-len(v)]
	return g, v, nil
}

// each calls fn for each posting of the group, in seq order.
func (g segGroup) each(fn func(p posting, seq uint64)) {
	v := g.body
	var seq uint64
	var created int64
	for range g.n {
		d, w := binary.Uvarint(v)
		v = v[w:]
		tf, w := binary.Uvarint(v)
		v = v[w:]
		dl, w := binary.Uvarint(v)
		v = v[w:]
		c, w := binary.Varint(v)
		v = v[w:]
		seq += d
		created += c
		fn(posting{tf: int(tf), dl: int(dl), created: created}, seq)
	}
}

// eachGroup calls fn for each group of a term's value.
func eachGroup(v []byte, fn func(segGroup) error) error {
	for len(v) > 0 {
		g, rest, err := nextGroup(v)
		if err != nil {
			return err
		}
		if err := fn(g); err != nil {
			return err
		}
		v = rest
	}
	return nil
}

// dropPostings returns v without conv's postings whose seq drop reports.
func dropPostings(v []byte, conv string, drop func(seq uint64) bool) ([]byte, error) {
	out := make([]byte, 0, len(v))
	err := eachGroup(v, func(g segGroup) error {
		if string(g.conv) != conv {
			out = append(out, g.raw...)
			return nil
		}
		var keep []segPosting
		g.each(func(p posting, seq uint64) {
			if !drop(seq) {
				keep = append(keep, segPosting{seq: seq, tf: p.tf, dl: p.dl, createdNs: p.created})
			}
		})
		out = encodeSegPostings(out, []string{conv}, keep)
		return nil
	})
	return out, err
}

// segment is the span of a conversation's records in one segment.
type segment struct {
	id          uint64
	first, last uint64
}

// segmentsOf returns the segments holding k's records.
func segmentsOf(txn *badger.Txn, k history.Key) ([]segment, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = segConvPrefix(k)
	it := txn.NewIterator(opts)
	defer it.Close()
	var segs []segment
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		sg := segment{id: binary.BigEndian.Uint64(item.Key()[len(opts.Prefix):])}
		err := item.Value(func(v []byte) error {
			var w1, w2 int
			sg.first, w1 = binary.Uvarint(v)
			if w1 > 0 {
				sg.last, w2 = binary.Uvarint(v[w1:])
			}
			if w1 <= 0 || w2 <= 0 {
				return errBadSegment
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		segs = append(segs, sg)
	}
	return segs, nil
}

// unpost removes message m's postings from the segment among segs that
// holds it (if any) in txn.
func unpost(txn *badger.Txn, k history.Key, segs []segment, m *history.Message) error {
	i := slices.IndexFunc(segs, func(sg segment) bool { return sg.first <= m.Seq && m.Seq <= sg.last })
	if i < 0 {
		return nil // not indexed
	}
	postings, _ := search.Analyze(m.Text())
	for _, p := range postings {
		key := segTermKey(k.Tenant, p.Term, segs[i].id)
		item, err := txn.Get(key)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		out, err := dropPostings(v, k.Conversation, func(seq uint64) bool { return seq == m.Seq })
		if err != nil {
			return err
		}
		if len(out) == 0 {
			err = txn.Delete(key)
		} else if !bytes.Equal(out, v) {
			err = txn.Set(key, out)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// segTermPrefix is the prefix of a term's postings in a tenant.
func segTermPrefix(tenant, term string) []byte {
	return pairPrefix('i', tenant, term, 8)
}

func segTermKey(tenant, term string, seg uint64) []byte {
	return binary.BigEndian.AppendUint64(segTermPrefix(tenant, term), seg)
}

func segConvPrefix(k history.Key) []byte {
	return pairPrefix('f', k.Tenant, k.Conversation, 8)
}

func segConvKey(k history.Key, seg uint64) []byte {
	return binary.BigEndian.AppendUint64(segConvPrefix(k), seg)
}

// segCounterKey holds the last segment id given out.
var segCounterKey = []byte("v\x00segment")

// readSegmentCounter loads the last segment id given out.
func (s *Store) readSegmentCounter() error {
	return readCounter(s.db, &s.segment)
}

// readCounter loads db's segment counter into n, leaving n as it is
// where db has none.
func readCounter(db *badger.DB, n *uint64) error {
	return db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(segCounterKey)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return errBadSegment
			}
			*n = binary.BigEndian.Uint64(v)
			return nil
		})
	})
}
