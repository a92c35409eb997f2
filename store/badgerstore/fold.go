package badgerstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// Postings are written after the records they describe, not with them:
// analysing each message and writing its postings made a commit of a
// turn of prose five times slower, on the request path. A commit writes
// the records and leaves the conversation's index watermark
// (totals.indexed) where it was, with its listing entry dirty; Search
// analyses the records past the watermark as it meets them (so what it
// finds never depends on the folder). The folder, woken every
// IndexBacklog messages, indexes every dirty conversation's new records,
// up to foldMessages per round, as one segment per tenant (segment.go),
// and moves the watermarks.
//
// A fold runs beside the committer, never in it: a fold that held the
// committer (as it did) made every durable commit wait for it, 7-40 ms a
// round. Each round reads and analyses in a snapshot, yielding the core
// after every message (it is background work: on a one-core proxy it ran
// in 10 ms slices that every request waited behind), and then writes in
// a short transaction that checks nothing it indexed changed meanwhile
// but by appending (see foldWrite). The records it analyses are those the
// committer handed over (Store.fresh) when it holds them all, read from
// the snapshot otherwise (a restart's backlog). Folds are one at a time
// (foldMu): each numbers its segments from Store.segment.
//
// The folder folds the conversations commits noted since it last woke
// (Store.noted), not every dirty listing entry: listing them all took 12
// ms of the core without a yield, every fold. Open and Close still fold
// every dirty entry (Fold), which covers what a run left or a failed fold
// dropped. And the folder is paced: yielding alone left a fold of a few
// thousand messages a quarter second with the core 90% busy, in which an
// open-loop request waited 20 ms for it. Its time on the core is counted
// between its yields, and past foldBurst of it, it pauses for as long as keeps it to
// foldShare of the machine's processors (a pacer measuring a job's wall-clock time
// instead, which a saturated core inflates, starved summaries: same
// document, "Pacing background work").

// foldMessages bounds the records one fold round indexes (one segment per
// tenant).
const foldMessages = 256

// defaultIndexBacklog is Options.IndexBacklog's default.
const defaultIndexBacklog = 4096

// foldAttempts bounds the rounds made again because what they read
// changed before they wrote (a commit that raced the write, an erasure).
const foldAttempts = 4

// foldShare is the share of the machine's processors the folder takes
// while it folds in the background, and foldBurst its time on the core
// between pauses. The folder is one goroutine: on one processor it runs
// a quarter of the time, on two half, and from 1/foldShare processors on
// it is not paced. The processors are GOMAXPROCS, but no more than the
// CPUs the process may run on: on one CPU Recall runs a second P while a
// computation holds the first (internal/procs), and a fold paced to half
// of two Ps then took half of the one CPU, just when requests waited for
// it.
const (
	foldShare = 0.25
	foldBurst = 2 * time.Millisecond
)

// errFoldStale is a fold round whose snapshot went stale before it wrote.
var errFoldStale = errors.New("badgerstore: fold raced a change; the next fold retries")

// foldedConv is what a fold round read of one conversation.
type foldedConv struct {
	k           history.Key
	t           totals // as read
	docs, terms int    // what the round indexed
	indexed     uint64 // the watermark after the round
	clean       bool   // indexed up to NextSeq: the listing entry can be marked clean
	version     uint64 // the metadata's version as read
}

// foldPlan is a fold round's reading: the conversations and the segments'
// keys and values.
type foldPlan struct {
	convs   []foldedConv
	entries []kv
	docs    int
	segment uint64 // Store.segment after the round
	left    []history.Key
}

// kv is a key and its value, to set.
type kv struct{ k, v []byte }

// kvs collects sets (a setter) for a later transaction.
type kvs []kv

func (s *kvs) Set(k, v []byte) error {
	*s = append(*s, kv{k, v})
	return nil
}

// foldRound indexes, in one transaction, the records past the watermarks
// of keys' conversations, in order, up to budget of them: one segment per
// tenant. It returns the conversations left to fold.
//
// Its first try takes each conversation's totals from what the last
// fold wrote (foldTotals), if it holds them, without reading them or the
// pending key: foldCommit reads both again, and fails the round as stale
// if either says otherwise. A round that failed so is tried again, as a
// try that does not count, reading them all.
func (s *Store) foldRound(keys []history.Key, budget int, p *pacer) ([]history.Key, error) {
	memo := true
	for attempt := 1; ; attempt++ {
		epoch := s.erasures.Load()
		plan, err := s.foldRead(keys, budget, p, memo)
		if err == nil && len(plan.convs) > 0 {
			if s.betweenFoldPhases != nil {
				s.betweenFoldPhases()
			}
			err = s.foldWrite(plan, epoch)
		}
		switch {
		case err == nil:
			return plan.left, nil
		case errors.Is(err, badger.ErrTxnTooBig) && budget > 1:
			budget /= 2
		case errors.Is(err, errFoldStale) && memo:
			for _, c := range plan.convs {
				delete(s.foldTotals, c.k)
			}
			memo = false
			attempt--
		case !errors.Is(err, errFoldStale) || attempt == foldAttempts:
			return nil, err
		}
	}
}

// foldRead reads and analyses, in a snapshot, the records a round indexes,
// and encodes its segments; p (nil: none) paces it. The caller holds
// foldMu: the round takes its builders from Store.foldBuilders and gives
// them back emptied (a round's postings grow to hundreds of kilobytes,
// allocated and zeroed again every round otherwise); what it returns
// holds none of their memory (segBuilder.write encodes copies). With
// memo, it takes the totals foldTotals holds (see foldRound).
func (s *Store) foldRead(keys []history.Key, budget int, p *pacer, memo bool) (foldPlan, error) {
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	if s.afterFoldSnapshot != nil {
		s.afterFoldSnapshot()
	}
	builders := map[string]*segBuilder{}
	defer func() {
		for _, b := range builders {
			b.reset()
			s.foldBuilders = append(s.foldBuilders, b)
		}
	}()
	var tenants []string
	var plan foldPlan
	for i, k := range keys {
		if plan.docs >= budget {
			plan.left = keys[i:]
			break
		}
		b := builders[k.Tenant]
		if b == nil {
			b = s.takeBuilder()
			builders[k.Tenant] = b
			tenants = append(tenants, k.Tenant)
		}
		start := time.Now()
		c, more, err := s.foldInto(txn, k, b, budget-plan.docs, memo)
		if err != nil {
			return foldPlan{}, err
		}
		p.spent(time.Since(start))
		runtime.Gosched() // background work: requests first (not inside the iterator, which pins memtables)
		if c.docs > 0 || c.clean {
			plan.convs = append(plan.convs, c)
			plan.docs += c.docs
		}
		if more {
			plan.left = keys[i:]
			break
		}
	}
	plan.segment = s.segment
	if plan.docs == 0 {
		return plan, nil
	}
	for _, tenant := range tenants {
		if b := builders[tenant]; b.docs > 0 {
			plan.segment++
			if err := b.write((*kvs)(&plan.entries), tenant, plan.segment); err != nil {
				return foldPlan{}, err
			}
		}
	}
	plan.entries = append(plan.entries, kv{segCounterKey, binary.BigEndian.AppendUint64(nil, plan.segment)})
	return plan, nil
}

// foldInto adds k's records past its watermark to b, up to budget of
// them. It returns what it read and whether some are left. The records
// the committer handed over (Store.fresh) are taken from memory; others
// are read from txn. With memo, the totals are foldTotals' if it holds
// them, and the pending key is not read (see foldRound).
func (s *Store) foldInto(txn *badger.Txn, k history.Key, b *segBuilder, budget int, memo bool) (c foldedConv, more bool, err error) {
	c.k = k
	var memoed bool
	if memo {
		c.t, memoed = s.foldTotals[k]
	}
	if !memoed {
		s.foldHeadReads.Add(1)
		if _, busy, err := readPending(txn, k); err != nil || busy {
			return c, false, err // its owner deletes or lands it; the next fold sees
		}
		if c.t, err = readTotals(txn, k); err != nil {
			return c, false, err
		}
	}
	prefix := convPrefix(k)
	m, msgs, fresh, err := s.foldSource(txn, k, prefix, c.t.from())
	if err != nil || m.Version == 0 {
		return c, false, err // deleted
	}
	c.version = m.Version
	last := c.t.from() - 1
	add := func(msg history.Message) bool {
		if c.docs == budget {
			more = true
			return false
		}
		c.terms += b.add(k.Conversation, &msg)
		c.docs++
		last = msg.Seq
		return true
	}
	if fresh {
		for _, msg := range msgs {
			// As iterate gives them.
			if msg.Flags |= m.FlagsAt(msg.Seq); msg.Flags&history.Erased == 0 && !add(msg) {
				break
			}
		}
	} else {
		s.foldReads.Add(1)
		err = iterate(txn, prefix, &m, c.t.from()-1, add)
	}
	if err != nil {
		return c, false, err
	}
	if more {
		c.indexed = last + 1
	} else {
		c.indexed = max(m.NextSeq, 1)
		c.clean = true
	}
	return c, more, nil
}

// foldSource returns k's metadata as a fold reads it, and its records
// from `from` on when the committer handed them all over (fresh true).
// It takes the metadata from the committer's cache (metaCache) when the
// records are all in memory: a Badger Get of the metadata in every
// conversation of every round was a sixth of the folder's time on a
// durable chat row. The cached metadata may be newer than txn's
// snapshot (a commit landed since): the records it covers are committed,
// and foldCommit, which reads the metadata and totals again in its own
// transaction, marks the listing entry clean only at the version the
// round indexed; or older (the committer had not cached its last write
// yet): the round indexes up to what it covers, and the next, woken by
// that commit, the rest. Otherwise, or when the cache is behind the
// watermark, the metadata is read from txn (Version 0: deleted).
func (s *Store) foldSource(txn *badger.Txn, k history.Key, prefix []byte, from uint64) (history.Meta, []history.Message, bool, error) {
	if m, ok := s.metas.foldHead(prefix); ok && m.Version != 0 && m.NextSeq >= from {
		if msgs, ok := s.fresh.take(k, m.Incarnation, from, m.NextSeq); ok {
			return m, msgs, true, nil
		}
	}
	s.foldMetaReads.Add(1)
	m, ok, err := readMetaHead(txn, prefix)
	if err != nil || !ok || m.Version == 0 {
		return history.Meta{}, nil, false, err
	}
	msgs, fresh := s.fresh.take(k, m.Incarnation, from, m.NextSeq)
	return m, msgs, fresh, nil
}

// foldWrite writes what foldRead read if nothing it indexed changed
// since (it fails with errFoldStale otherwise): each conversation is
// still there, not held by pending work, with the totals foldRead saw (a
// hard forget changes them), and no erasure of records began since
// foldRead did (epoch: one that erased only records past the watermark
// leaves the totals as they were). Commits that only appended leave the
// new records past the new watermark, and the listing entry dirty.
//
// The segments go to the side database first, and then the watermarks,
// listing entries and counter to the main one in a transaction whose
// reads make a commit that lands meanwhile conflict with it; if that
// fails the segments are deleted again (side.go). The side database is
// not synced here: see writeSegments.
func (s *Store) foldWrite(plan foldPlan, epoch uint64) error {
	if s.erasures.Load() != epoch {
		return errFoldStale
	}
	if err := s.writeSegments(plan.entries); err != nil {
		return err
	}
	err := s.commitFold(&plan, epoch)
	if err != nil {
		if derr := s.dropSegments(plan.entries); derr != nil {
			return errors.Join(err, derr)
		}
		return err
	}
	s.segment = plan.segment
	for _, c := range plan.convs {
		s.fresh.trim(c.k, c.indexed)
	}
	return nil
}

// writeSegments writes a fold round's segments and the side counter to
// the side database. It does not sync it: a sync each round (about one
// every 128 durable requests in the load script) was a quarter of the
// folder's time, two msyncs holding a thread. Only a crash of the
// machine can lose writes that are not synced (a process killed leaves
// them in the page cache), and it loses a suffix of them, the side
// counter with the segments it numbers: the main database's counter then
// passes the side's, and Open rebuilds the search index
// (dropOrphanSegments, buildIndexes). The side database is synced every
// sideSyncEvery meanwhile, and by an erasure before its pending mark goes.
func (s *Store) writeSegments(entries []kv) error {
	return s.side.Update(func(txn *badger.Txn) error {
		for _, e := range entries {
			if err := txn.Set(e.k, e.v); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropSegments deletes a round's segments after its main transaction
// failed (the side counter is left: Open compares it with the main one).
func (s *Store) dropSegments(entries []kv) error {
	wb := s.side.NewWriteBatch()
	defer wb.Cancel()
	for _, e := range entries {
		if bytes.Equal(e.k, segCounterKey) {
			continue
		}
		if err := wb.Delete(e.k); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// foldReq is a fold round's commit handed to the committer.
type foldReq struct {
	plan  *foldPlan
	epoch uint64
}

// commitFold runs foldCommit in the committer, which writes every
// metadata, totals and pending key (but Open's), and so knows them
// without reading them. The committer's reads were 6.9 µs of a durable chat request
// (docs/performance.md): three Gets a conversation, each searching every
// level of the tree.
func (s *Store) commitFold(plan *foldPlan, epoch uint64) error {
	req := &commitReq{ctx: context.Background(), fold: &foldReq{plan: plan, epoch: epoch}, done: make(chan commitRes, 1)}
	err := s.viaCommitter(context.Background(), req)
	if errors.Is(err, errClosed) {
		// The committer is stopping (Close): here, with the reads.
		return s.foldCommit(plan, epoch, false)
	}
	return err
}

// foldCommit moves the watermarks and marks the listing entries of the
// conversations plan indexed, and the main segment counter, in one
// transaction of the main database. In the committer (held), it takes a
// conversation's metadata from the committer's cache, where it finds no
// pending mark (see groupMeta), and its totals from what the committer
// last wrote of them (heldTotals), and reads in Badger only what they
// lack.
func (s *Store) foldCommit(plan *foldPlan, epoch uint64, held bool) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	written := make([]totals, len(plan.convs))
	for i, c := range plan.convs {
		m, t, err := s.foldHead(txn, c.k, held)
		if err != nil || m.Version == 0 || t != c.t {
			return errors.Join(err, errFoldStale)
		}
		t.docs += c.docs
		t.terms += c.terms
		t.indexed = c.indexed
		written[i] = t
		if err := setTotals(txn, c.k, t); err != nil {
			return err
		}
		if c.clean && m.Version == c.version {
			if err := txn.Set(listKey(c.k, m.UpdatedAt), listClean); err != nil {
				return err
			}
		}
	}
	if s.erasures.Load() != epoch {
		return errFoldStale
	}
	if err := txn.Set(segCounterKey, binary.BigEndian.AppendUint64(nil, plan.segment)); err != nil {
		return err
	}
	if s.beforeFoldCommit != nil {
		s.beforeFoldCommit()
	}
	if s.failFoldCommit != nil {
		if err := s.failFoldCommit(); err != nil {
			return err
		}
	}
	s.genPre.Add(uint64(plan.docs)) // before and after the changes can be seen (see tenantStats)
	err := txn.Commit()
	s.genPost.Add(uint64(plan.docs))
	if errors.Is(err, badger.ErrConflict) {
		return errFoldStale
	}
	if err == nil && held {
		s.holdTotals(plan.convs, written)
	}
	if err == nil {
		s.memoTotals(plan.convs, written)
	}
	return err
}

// foldHead returns what foldCommit checks of k: its metadata (Version 0:
// gone, or held by pending work) and totals, from the committer's memory
// when held and it has them, else read in txn.
func (s *Store) foldHead(txn *badger.Txn, k history.Key, held bool) (history.Meta, totals, error) {
	prefix := convPrefix(k)
	var m history.Meta
	var cached bool
	if held {
		m, cached = s.metas.get(prefix)
	}
	if !cached {
		s.foldCommitReads.Add(1)
		if _, busy, err := readPending(txn, k); err != nil || busy {
			return history.Meta{}, totals{}, err
		}
		var ok bool
		var err error
		if m, ok, err = readMetaHead(txn, prefix); err != nil || !ok {
			return history.Meta{}, totals{}, err
		}
	}
	if held {
		if t, ok := s.heldTotals[k]; ok {
			return m, t, nil
		}
		s.foldCommitReads.Add(1)
	}
	t, err := readTotals(txn, k)
	return m, t, err
}

// totalsMemoMax bounds the conversations foldTotals and heldTotals hold
// totals of: past it, each starts again empty (what it drops is read, as
// before it).
const totalsMemoMax = 1 << 14

// memoTotals notes in foldTotals the totals a fold wrote of convs. The
// caller holds foldMu.
func (s *Store) memoTotals(convs []foldedConv, written []totals) {
	noteTotals(&s.foldTotals, convs, written)
}

// holdTotals notes in heldTotals the totals the committer wrote of convs
// in a fold's commit. Only the committer reads or writes heldTotals; its
// other writes of totals (a hard forget, a Delete, a staged commit) drop
// their conversation from it.
func (s *Store) holdTotals(convs []foldedConv, written []totals) {
	noteTotals(&s.heldTotals, convs, written)
}

// noteTotals notes in *memo the totals written of convs.
func noteTotals(memo *map[history.Key]totals, convs []foldedConv, written []totals) {
	if *memo == nil || len(*memo)+len(convs) > totalsMemoMax {
		*memo = make(map[history.Key]totals, len(convs))
	}
	for i, c := range convs {
		(*memo)[c.k] = written[i]
	}
}

// Fold indexes every record written so far that has no postings yet, and
// returns when it is done (the folder does it in the background; tests
// and operator tools may want it now).
func (s *Store) Fold() error {
	s.scans.Add(1)
	var keys []history.Key
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{'l', 0}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			rest := item.Key()[2:]
			i := bytes.IndexByte(rest, 0)
			if i < 0 || len(rest) < i+9 {
				continue
			}
			err := item.Value(func(v []byte) error {
				if dirty(v) {
					keys = append(keys, history.Key{Tenant: string(rest[:i]), Conversation: string(rest[i+9:])})
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.fold(keys, nil)
}

// fold indexes keys' records past their watermarks, a round of at most
// foldMessages records at a time, until done or Close; p (nil: none)
// paces it.
func (s *Store) fold(keys []history.Key, p *pacer) error {
	s.foldMu.Lock()
	defer s.foldMu.Unlock()
	for len(keys) > 0 {
		select {
		case <-s.closing:
			return errClosed
		default:
		}
		var err error
		if keys, err = s.foldRound(keys, foldMessages, p); err != nil {
			return err
		}
	}
	return nil
}

// noteBacklog notes k for the folder, counts n records written without
// postings and wakes the folder past Options.IndexBacklog of them; with a
// negative IndexBacklog it folds k at once.
func (s *Store) noteBacklog(k history.Key, n int) error {
	if n == 0 {
		return nil
	}
	if s.indexBacklog < 0 {
		return s.fold([]history.Key{k}, nil)
	}
	s.note(k)
	if s.backlog.Add(int64(n)) >= int64(s.indexBacklog) {
		s.backlog.Store(0)
		select {
		case s.foldNow <- struct{}{}:
		default: // already awake
		}
	}
	return nil
}

// note adds k to the conversations the folder folds when it next wakes.
func (s *Store) note(k history.Key) {
	s.notedMu.Lock()
	if s.noted == nil {
		s.noted = map[history.Key]struct{}{}
	}
	s.noted[k] = struct{}{}
	s.notedMu.Unlock()
}

// takeNoted returns the conversations noted since the last call, in key
// order (a round writes one segment per tenant it meets).
func (s *Store) takeNoted() []history.Key {
	s.notedMu.Lock()
	noted := s.noted
	s.noted = nil
	s.notedMu.Unlock()
	keys := make([]history.Key, 0, len(noted))
	for k := range noted {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b history.Key) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Conversation, b.Conversation))
	})
	return keys
}

// folder folds, paced, the conversations noted whenever noteBacklog wakes
// it, until Close. What a failed fold took is noted again for the next.
func (s *Store) folder() {
	defer close(s.folded)
	for {
		select {
		case <-s.foldNow:
		case <-s.closing:
			return
		}
		keys := s.takeNoted()
		err := s.fold(keys, s.newPacer())
		if err != nil {
			for _, k := range keys {
				s.note(k)
			}
			if !errors.Is(err, errClosed) && s.logger != nil {
				s.logger.Warn("indexing messages for search failed; the next fold retries", "component", "badgerstore", "error", err.Error())
			}
		}
		if s.afterFold != nil {
			s.afterFold(err)
		}
	}
}

// pacer keeps a background fold to a share of the wall clock: it counts
// the fold's time on the core and, past foldBurst of it, pauses for as
// long as that time is to the share.
type pacer struct {
	share float64
	burst time.Duration // on the core between pauses
	run   time.Duration // on the core since the last pause
	pause func(time.Duration)
}

// newPacer paces a fold to foldShare of the machine's processors, or
// returns nil (no pacing) if one processor is within that share.
func (s *Store) newPacer() *pacer {
	procs := runtime.GOMAXPROCS(0)
	if s.cpus > 0 {
		procs = min(procs, s.cpus)
	}
	share := foldShare * float64(procs)
	if share >= 1 {
		return nil
	}
	return &pacer{share: share, burst: s.burst, pause: s.pause}
}

// spent counts d on the core, and pauses past p.burst of it.
func (p *pacer) spent(d time.Duration) {
	if p == nil {
		return
	}
	p.run += d
	if p.run < p.burst {
		return
	}
	p.pause(time.Duration(float64(p.run) * (1 - p.share) / p.share))
	p.run = 0
}

// pauseFold waits d, or less once Close has begun (it folds what is left
// without pauses).
func (s *Store) pauseFold(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.hurry:
	}
}

// backlogDoc is a record past its conversation's watermark, analysed.
type backlogDoc struct {
	seq      uint64
	created  int64
	active   bool
	postings []search.Posting
	dl       int
}

// backlog analyses the records of m's conversation past the watermark t.
func backlog(txn *badger.Txn, prefix []byte, m *history.Meta, t totals) ([]backlogDoc, error) {
	if t.from() >= m.NextSeq {
		return nil, nil
	}
	var docs []backlogDoc
	err := iterate(txn, prefix, m, t.from()-1, func(msg history.Message) bool {
		p, dl := search.Analyze(msg.Text())
		docs = append(docs, backlogDoc{seq: msg.Seq, created: msg.CreatedAt.UnixNano(), active: msg.Active(), postings: p, dl: dl})
		return true
	})
	return docs, err
}
