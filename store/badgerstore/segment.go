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
// per tenant, a table of the segment's conversations and, per distinct
// term, one key holding every posting of that term in the batch:
//
//	g \x00 tenant \x00 \x00 segment(8, BE)             the segment's conversations
//	i \x00 tenant \x00 term \x00 segment(8, BE)        postings of the term in the segment
//	f \x00 tenant \x00 conversation \x00 segment(8, BE) the conversation's span and place in it
//
// One key per posting (term, conversation, seq) made the index five to
// ten Badger entries per stored byte of prose: at full load the memtable
// flushes and compactions it caused took the proxy's core from the
// requests. A segment key holds thousands of postings, and its value,
// past the value threshold, goes to the value log.
//
// The table lists the segment's conversations in order, each once:
//
//	uvarint len(conversation), conversation, uvarint first seq, varint first created
//
// (the first seq and creation time, Unix nanoseconds, of the
// conversation's records in the segment: its base). A term's value is a
// run of groups, one per conversation, naming it by its place in the
// table:
//
//	uvarint index, uvarint n,
//	n × (uvarint seq delta, uvarint tf, uvarint dl, varint created delta)
//
// seq and created are deltas from the group's previous posting, the
// first's from the conversation's base. Groups that spelled out the
// conversation's id and a full creation time (index version 3) made the
// index twice the bytes of the prose it indexed with short ids, and more
// than three times with UUIDs (BenchmarkSegBuilder). The f keys hold the
// first and last seq of the conversation's records in the segment, its
// index in the table and its base's creation time: a purge (pending.go)
// finds the segments holding a record, and decodes its postings, without
// reading any other key. A conversation whose spans are all purged from a
// segment leaves an empty id in its table.

// segBase is where a conversation's first group of postings in a segment
// counts its deltas from: its first record's seq and creation time.
type segBase struct {
	seq     uint64
	created int64
}

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
	created  []int64     // per conversation: its first record's creation time
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
	b.created = b.created[:0]
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
	created := m.CreatedAt.UnixNano()
	i := len(b.convs) - 1
	if i < 0 || b.convs[i] != conv {
		b.convs = append(b.convs, conv)
		b.ranges = append(b.ranges, [2]uint64{m.Seq, m.Seq})
		b.created = append(b.created, created)
		i++
	}
	b.ranges[i][1] = m.Seq
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
	bases := make([]segBase, len(b.convs))
	for i := range bases {
		bases[i] = segBase{seq: b.ranges[i][0], created: b.created[i]}
	}
	// The keys and values are cut from one buffer, not allocated two a
	// term: each is taken once written, so a buffer that grows leaves
	// those taken where they were, intact.
	buf := make([]byte, 0, len(terms)*(len(tenant)+16)+len(b.postings)*8+len(b.convs)*(len(b.convs[0])+16))
	k := len(buf)
	buf = segTableKeyTo(buf, tenant, seg)
	v := len(buf)
	buf = encodeSegTable(buf, b.convs, bases)
	if err := txn.Set(buf[k:v:v], buf[v:len(buf):len(buf)]); err != nil {
		return err
	}
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
		buf = encodeSegPostings(buf, bases, ps)
		if err := txn.Set(buf[k:v:v], buf[v:len(buf):len(buf)]); err != nil {
			return err
		}
	}
	for i, conv := range b.convs {
		v := binary.AppendUvarint(make([]byte, 0, 4*binary.MaxVarintLen64), b.ranges[i][0])
		v = binary.AppendUvarint(v, b.ranges[i][1])
		v = binary.AppendUvarint(v, uint64(i))
		v = binary.AppendVarint(v, b.created[i])
		if err := txn.Set(segConvKey(history.Key{Tenant: tenant, Conversation: conv}, seg), v); err != nil {
			return err
		}
	}
	return nil
}

// encodeSegTable appends a segment's table of convs and their bases to
// dst.
func encodeSegTable(dst []byte, convs []string, bases []segBase) []byte {
	for i, conv := range convs {
		dst = appendSegEntry(dst, conv, bases[i])
	}
	return dst
}

// appendSegEntry appends one conversation's entry in a segment's table.
func appendSegEntry[S ~string | ~[]byte](dst []byte, conv S, base segBase) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(conv)))
	dst = append(dst, conv...)
	dst = binary.AppendUvarint(dst, base.seq)
	return binary.AppendVarint(dst, base.created)
}

// segEntry is a conversation's entry in a segment's table, decoded: its
// id (empty for one purged from the segment), cut from the value read,
// and its base.
type segEntry struct {
	conv []byte
	base segBase
}

// decodeSegTable decodes a segment's table v, which the entries keep.
func decodeSegTable(v []byte) ([]segEntry, error) {
	n := 0
	for rest := v; len(rest) > 0; n++ {
		var err error
		if _, rest, err = nextSegEntry(rest); err != nil {
			return nil, err
		}
	}
	t := make([]segEntry, n)
	for i := range t {
		t[i], v, _ = nextSegEntry(v)
	}
	return t, nil
}

// nextSegEntry splits the first entry off a segment's table v.
func nextSegEntry(v []byte) (e segEntry, rest []byte, err error) {
	l, w := binary.Uvarint(v)
	if w <= 0 || l > uint64(len(v)-w) {
		return e, nil, errBadSegment
	}
	e.conv = v[w : w+int(l) : w+int(l)]
	v = v[w+int(l):]
	if e.base.seq, w = binary.Uvarint(v); w <= 0 {
		return e, nil, errBadSegment
	}
	v = v[w:]
	if e.base.created, w = binary.Varint(v); w <= 0 {
		return e, nil, errBadSegment
	}
	return e, v[w:], nil
}

// readSegTable reads the table of tenant's segment seg (none if the
// segment has none); key is room for its key.
func readSegTable(txn *badger.Txn, key []byte, tenant string, seg uint64) ([]segEntry, error) {
	item, err := txn.Get(segTableKeyTo(key[:0], tenant, seg))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	return decodeSegTable(v)
}

// encodeSegPostings appends the groups of ps (ordered by conversation,
// then seq) to dst, each counted from its conversation's base in bases.
func encodeSegPostings(dst []byte, bases []segBase, ps []segPosting) []byte {
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].conv == ps[i].conv {
			j++
		}
		dst = encodeSegGroup(dst, ps[i].conv, bases[ps[i].conv], ps[i:j])
		i = j
	}
	return dst
}

// encodeSegGroup appends the group of conversation index, whose base is
// base, holding ps (in seq order).
func encodeSegGroup(dst []byte, index int, base segBase, ps []segPosting) []byte {
	dst = binary.AppendUvarint(dst, uint64(index))
	dst = binary.AppendUvarint(dst, uint64(len(ps)))
	seq, created := base.seq, base.created
	for _, p := range ps {
		dst = binary.AppendUvarint(dst, p.seq-seq)
		dst = binary.AppendUvarint(dst, uint64(p.tf))
		dst = binary.AppendUvarint(dst, uint64(p.dl))
		dst = binary.AppendVarint(dst, p.createdNs-created)
		seq, created = p.seq, p.createdNs
	}
	return dst
}

var errBadSegment = errors.New("badgerstore: bad segment postings")

// segGroup is one conversation's postings in a term's value, undecoded.
type segGroup struct {
	conv int // the conversation's index in the segment's table
	n    int
	body []byte // n postings
	raw  []byte // the whole group, header included
}

// nextGroup splits the first group off v.
func nextGroup(v []byte) (g segGroup, rest []byte, err error) {
	start := v
	c, w := binary.Uvarint(v)
	if w <= 0 || c > uint64(len(v)) {
		return g, nil, errBadSegment
	}
	g.conv, v = int(c), v[w:]
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

// each calls fn for each posting of the group, in seq order; base is
// its conversation's.
func (g segGroup) each(base segBase, fn func(p posting, seq uint64)) {
	v := g.body
	seq, created := base.seq, base.created
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

// dropPostings returns v without the postings of the conversation at
// index (whose base is base) whose seq drop reports.
func dropPostings(v []byte, index int, base segBase, drop func(seq uint64) bool) ([]byte, error) {
	out := make([]byte, 0, len(v))
	err := eachGroup(v, func(g segGroup) error {
		if g.conv != index {
			out = append(out, g.raw...)
			return nil
		}
		var keep []segPosting
		g.each(base, func(p posting, seq uint64) {
			if !drop(seq) {
				keep = append(keep, segPosting{seq: seq, tf: p.tf, dl: p.dl, createdNs: p.created})
			}
		})
		if len(keep) > 0 {
			out = encodeSegGroup(out, index, base, keep)
		}
		return nil
	})
	return out, err
}

// segment is the span of a conversation's records in one segment, its
// index in the segment's table and its base there.
type segment struct {
	id          uint64
	first, last uint64
	index       int
	base        segBase
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
			var ok bool
			sg, ok = decodeSpan(sg.id, v)
			if !ok {
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

// unlist empties k's id in the table of segment sg (k's span in it),
// whose postings of k are gone, and deletes the table once every id in
// it is empty.
func unlist(txn *badger.Txn, k history.Key, sg segment) error {
	t, err := readSegTable(txn, nil, k.Tenant, sg.id)
	if err != nil || sg.index >= len(t) || string(t[sg.index].conv) != k.Conversation {
		return err
	}
	t[sg.index].conv = nil
	key := segTableKeyTo(nil, k.Tenant, sg.id)
	if !slices.ContainsFunc(t, func(e segEntry) bool { return len(e.conv) > 0 }) {
		return txn.Delete(key)
	}
	var v []byte
	for _, e := range t {
		v = appendSegEntry(v, e.conv, e.base)
	}
	return txn.Set(key, v)
}

// decodeSpan decodes an f key's value, of segment id.
func decodeSpan(id uint64, v []byte) (segment, bool) {
	sg := segment{id: id}
	var fields [3]uint64
	for i := range fields {
		f, w := binary.Uvarint(v)
		if w <= 0 {
			return sg, false
		}
		fields[i], v = f, v[w:]
	}
	created, w := binary.Varint(v)
	if w <= 0 || w != len(v) || fields[2] > 1<<31 {
		return sg, false
	}
	sg.first, sg.last, sg.index = fields[0], fields[1], int(fields[2])
	sg.base = segBase{seq: sg.first, created: created}
	return sg, true
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
		out, err := dropPostings(v, segs[i].index, segs[i].base, func(seq uint64) bool { return seq == m.Seq })
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

// segTableKeyTo appends the key of tenant's segment seg's table to dst.
func segTableKeyTo(dst []byte, tenant string, seg uint64) []byte {
	return binary.BigEndian.AppendUint64(appendPair(dst, 'g', tenant, ""), seg)
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
