package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// errClosed is a commit sent to a store that is closing.
var errClosed = errors.New("badgerstore: store closed")

// maxBatch bounds the commits one transaction groups.
const maxBatch = 256

// commitRetries bounds how many times a transaction is made again after
// a write outside the committer raced a key it read.
const commitRetries = 3

// commitReq is one Commit waiting for the committer.
type commitReq struct {
	ctx    context.Context
	key    history.Key
	change history.Change
	del    bool           // a Delete's first transaction (deleteMeta), not a change
	big    bool           // too big for one transaction: staged at once (see tooBig)
	fold   *foldReq       // a fold round's commit (fold.go), not a change
	done   chan commitRes // buffered: the committer never blocks on it
}

type commitRes struct {
	meta history.Meta
	err  error
}

// Commit applies c atomically.
//
// Commits go through one committer goroutine that groups every commit
// waiting at the time into one Badger transaction: with durable writes,
// concurrent commits (of different conversations) share one fsync
// instead of syncing the log once each. Relaxed writes (no fsync) go
// through it too: it keeps the metadata and the fresh records cached
// (metaCache, freshRecords), which a commit in its own transaction would
// have to read back from Badger, three Gets through every level of the
// tree a commit (docs/performance.md). Each commit of a group keeps its
// own version check; one that fails it does not fail the others.
//
// A change too big for one Badger transaction (tens of thousands of
// messages, or megabytes of them below the value-log threshold) first
// writes its messages in as many transactions as it takes, past the
// metadata's NextSeq, where no read looks, then commits the metadata that
// makes them visible: still all or nothing, and a crash in between leaves
// only invisible records that later commits overwrite.
//
// A commit whose ctx ends before the committer takes it is not applied. One
// whose ctx ends while it is being applied may still land after Commit
// returned ctx's error.
func (s *Store) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	hard := c.Forget != nil && c.Forget.Hard
	if hard {
		defer s.work(k)() // the erasure below
	}
	m, err := s.commit(ctx, k, c)
	if err == nil && hard && s.beforeErase != nil {
		s.beforeErase()
	}
	if err == nil && hard {
		// The erased records and their postings, marked by the commit.
		if err = s.finishPending(k, pendingErase); err != nil {
			err = fmt.Errorf("badgerstore: commit %s: erase: %w", k, err)
		}
	}
	if err == nil {
		if ferr := s.noteBacklog(k, len(c.Append)); ferr != nil && s.logger != nil {
			s.logger.Warn("indexing messages for search failed; the next fold retries", "component", "badgerstore", "error", ferr.Error())
		}
	}
	if errors.Is(err, history.ErrConflict) {
		// Perhaps pending work nobody does blocks the conversation:
		// finish it, so that the caller's retry goes through.
		if uerr := s.unstick(k); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}
	return m, err
}

func (s *Store) commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if err := ctx.Err(); err != nil {
		return history.Meta{}, err
	}
	if err := s.CanCommit(); err != nil {
		return history.Meta{}, err
	}
	req := &commitReq{ctx: ctx, key: k, change: c, big: s.tooBig(c), done: make(chan commitRes, 1)}
	select {
	case s.commits <- req:
	case <-s.closing:
		return history.Meta{}, errClosed
	case <-ctx.Done():
		return history.Meta{}, ctx.Err()
	}
	select {
	case res := <-req.done:
		if res.err != nil {
			return history.Meta{}, fmt.Errorf("badgerstore: commit %s: %w", k, res.err)
		}
		return res.meta, nil
	case <-ctx.Done():
		return history.Meta{}, ctx.Err()
	}
}

// committer applies commits in groups until Close, then fails what is
// left.
//
// With durable writes, each group costs a sync of Badger's logs, whose
// CPU is the proxy's (a tenth of it in the load script's closed loop).
// Left alone, the committer syncs as soon as one commit waits: when the
// callers are busy elsewhere (the proxy's core), groups stay at one or
// two commits. So when fewer than half as many commits wait as the last
// group held, the committer gathers until as many as the last group
// have come, or for Options.GroupWait at most: one sync then serves many
// commits. A commit alone never waits. (A plain fixed wait made idle
// committers slower: BenchmarkCommitConcurrent.)
func (s *Store) committer() {
	defer close(s.stopped)
	if s.logs != nil {
		s.toSync = make(chan syncJob, maxBatch)
		synced := make(chan struct{})
		go s.logSyncer(synced)
		defer func() { close(s.toSync); <-synced }() // before stopped: what was written is answered
	}
	batch := make([]*commitReq, 0, maxBatch)
	last := 0 // commits in the previous group
	for {
		select {
		case req := <-s.commits:
			batch = append(batch[:0], req)
		case <-s.closing:
			for {
				select {
				case req := <-s.commits:
					req.done <- commitRes{err: errClosed}
				default:
					return
				}
			}
		}
		batch = s.drain(batch)
		if s.groupWait > 0 && !s.noSync && 2*len(batch) <= last {
			batch = s.gather(batch, last)
		}
		live := batch[:0]
		for _, req := range batch {
			if err := req.ctx.Err(); err != nil {
				req.done <- commitRes{err: err}
				continue
			}
			live = append(live, req)
		}
		last = len(live)
		s.lastGroup.Store(int64(last))
		s.groups.Add(1)
		for len(live) > 0 {
			if r := live[0]; r.fold != nil {
				r.done <- commitRes{err: s.foldCommit(r.fold.plan, r.fold.epoch, true)}
				live = live[1:]
				continue
			}
			live = live[s.commitGroup(live, commitRetries):]
		}
		clear(batch)
	}
}

// gather adds to batch the commits that come until it holds want, or
// for Options.GroupWait.
func (s *Store) gather(batch []*commitReq, want int) []*commitReq {
	timeout := s.after(s.groupWait)
	for len(batch) < min(want, maxBatch) {
		select {
		case req := <-s.commits:
			batch = append(batch, req)
		case <-timeout:
			return s.drain(batch)
		}
	}
	return batch
}

// drain adds to batch the commits waiting, up to maxBatch.
func (s *Store) drain(batch []*commitReq) []*commitReq {
	for len(batch) < maxBatch {
		select {
		case req := <-s.commits:
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// commitGroup commits as many of reqs as fit one transaction, from the
// first, answers them, and returns how many it took. It is made again,
// up to retries times, if a write outside the committer conflicts.
func (s *Store) commitGroup(reqs []*commitReq, retries int) int {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	res := make([]commitRes, len(reqs))
	metas := make(map[string]history.Meta, len(reqs)) // metadata as this group leaves it
	written := make([][]history.Message, len(reqs))   // the records each commit wrote
	var bump uint64                                   // for Store.gen
	n := 0
	for ; n < len(reqs); n++ {
		r := reqs[n]
		if r.big || r.fold != nil {
			break // alone, below or in the next group
		}
		if r.del || (r.change.Forget != nil && r.change.Forget.Hard) {
			delete(s.heldTotals, r.key) // it changes them (see foldCommit)
		}
		prefix := convPrefix(r.key)
		m, cached, err := s.groupMeta(txn, metas, prefix)
		switch {
		case err != nil:
		case r.del:
			err = deleteMeta(txn, r.key, &m)
			m = history.Meta{}
			bump += statsRefresh
		default:
			m, written[n], err = s.write(txn, r.key, prefix, m, r.change, cached)
			bump += statsBump(r.change)
		}
		if errors.Is(err, badger.ErrTxnTooBig) {
			break
		}
		if err != nil {
			res[n].err = err
			if !errors.Is(err, history.ErrConflict) && !errors.Is(err, history.ErrStale) {
				// A read failed: the transaction may hold part of this
				// commit. Give up on the group.
				for i := range n + 1 {
					reqs[i].done <- commitRes{err: err}
				}
				return n + 1
			}
			continue
		}
		metas[string(prefix)] = m
		res[n].meta = m
	}
	if n == 0 {
		// One commit alone is too big for a transaction: stage it.
		r := reqs[0]
		if r.del {
			r.done <- commitRes{err: badger.ErrTxnTooBig} // bounded: never
			return 1
		}
		m, err := s.commitStaged(r.key, r.change)
		// Written outside the group, perhaps in part.
		s.metas.drop(convPrefix(r.key))
		s.fresh.drop(r.key)
		delete(s.heldTotals, r.key)
		r.done <- commitRes{meta: m, err: err}
		return 1
	}
	if n < len(reqs) && !reqs[n].big && reqs[n].fold == nil {
		// The next commit did not fit and the transaction may hold part
		// of it: commit the group without it, from scratch.
		txn.Discard()
		return s.commitGroup(reqs[:n], retries)
	}
	s.genPre.Add(bump) // before and after the changes can be seen (see tenantStats)
	err := txn.Commit()
	s.genPost.Add(bump)
	s.noteWritten(reqs[:n], res, written, err)
	if err == nil && s.logs != nil {
		// Acknowledged only once durable, by the log syncer: meanwhile
		// the next group is written.
		if s.afterGroupWrite != nil {
			s.afterGroupWrite()
		}
		s.toSync <- syncJob{reqs: slices.Clone(reqs[:n]), res: res}
		return n
	}
	if errors.Is(err, badger.ErrConflict) {
		if retries > 0 {
			// A write outside the committer raced one the group read (a
			// fold's totals, which a hard forget reads; pending work ending):
			// the group again, whose own checks say which commit conflicts.
			txn.Discard()
			return s.commitGroup(reqs[:n], retries-1)
		}
		err = history.ErrConflict
	}
	for i := range n {
		if err != nil {
			res[i] = commitRes{err: err}
		}
		reqs[i].done <- res[i]
	}
	return n
}

// logSyncHold is how long a group written while a sync is under way
// waits for it to end before its own sync begins beside it: longer than
// this disk's syncs take on an idle machine (0.3-0.5 ms), so that the
// second context is for a slow sync, not for every group.
const logSyncHold = 2 * time.Millisecond

// syncJob is a group written to Badger, to answer once the logs are
// synced.
type syncJob struct {
	reqs []*commitReq
	res  []commitRes
}

// logSyncer syncs Badger's logs for the groups the committer wrote, and
// answers them, until the committer closes toSync; then, once every
// group is answered, it closes done.
//
// A durable group used to be written and synced by the committer in
// turn: on the load script's open rows the committer was 90% busy, 57% of
// it waiting for the fsyncs (a runtime/trace of recall-sync at 946
// req/s), and a commit waited for the group ahead's sync before its own
// group was even written. Now the committer writes the next group while
// this goroutine syncs: one sync covers every group written before it
// began (the groups waiting here when it begins), and no group is
// answered before a sync that began after its write. Up to
// logSyncsInFlight syncs run at once (logSync), so a group need not wait
// for the sync under way to end before its own begins; groups are
// answered in the order they were written.
func (s *Store) logSyncer(done chan<- struct{}) {
	var ends sync.WaitGroup
	defer func() { ends.Wait(); close(done) }()
	for job := range s.toSync {
		a := s.logs.acquire() // what comes while the syncs under way hold the contexts joins this one
		s.logs.settle(s.syncHold)
		jobs := []syncJob{job}
	more:
		for {
			select {
			case j, ok := <-s.toSync:
				if !ok {
					break more
				}
				jobs = append(jobs, j)
			default:
				break more
			}
		}
		start := time.Now()
		run := s.logs.begin(a)
		ends.Go(func() {
			if s.beforeLogSync != nil {
				s.beforeLogSync()
			}
			err := run.end()
			if s.onSync != nil {
				s.onSync(time.Since(start))
			}
			for _, j := range jobs {
				for i, r := range j.reqs {
					if err != nil {
						j.res[i] = commitRes{err: err}
					}
					r.done <- j.res[i]
				}
			}
		})
	}
}

// syncLogs fsyncs Badger's logs (Store.logs).
func (s *Store) syncLogs() error {
	return s.logs.sync()
}

// statsRefresh, added to Store.gen, makes every cached tenant statistic
// stale: a change that removes indexed records (a hard forget, a delete).
const statsRefresh = 1 << 40

// statsBump is what c adds to Store.gen: it changes the indexed totals
// only if it erases.
func statsBump(c history.Change) uint64 {
	if c.Forget != nil && c.Forget.Hard {
		return statsRefresh
	}
	return 0
}

// tooBig reports whether c has so many messages that it cannot fit one
// transaction (each message is a record and a posting per term): it is
// staged at once, rather than after filling a transaction in vain.
func (s *Store) tooBig(c history.Change) bool {
	return int64(len(c.Append)) > s.db.MaxBatchCount()/2
}

// updateMeta runs fn in a read-write transaction with the metadata
// stored under prefix (zero if there is none).
func (s *Store) updateMeta(prefix []byte, fn func(txn *badger.Txn, m history.Meta) error) error {
	return s.db.Update(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, prefix)
		if err != nil {
			return err
		}
		return fn(txn, m)
	})
}

// groupMeta returns a conversation's metadata as the group has left it so
// far, or as the committer last wrote it (metaCache: cached true), or as
// stored.
//
// A conversation the cache holds has no pending mark: every mark a
// durable store sets is set by the committer (a Delete, a hard forget, a
// staged commit), which then drops the conversation from the cache
// (noteWritten, commitGroup), and a commit that puts it back read no mark
// (its metadata was not cached, so apply read the mark, and a mark fails
// the commit). A mark's going does not matter. So a commit whose
// metadata came from the cache reads no mark: the Badger Get it saves
// looks through every level, a mark being almost never there.
func (s *Store) groupMeta(txn *badger.Txn, metas map[string]history.Meta, prefix []byte) (m history.Meta, cached bool, err error) {
	if m, ok := metas[string(prefix)]; ok {
		return m, false, nil // this group's write, which may have set a mark
	}
	if m, ok := s.metas.get(prefix); ok {
		return m, true, nil
	}
	s.metaReads.Add(1)
	m, _, err = readMeta(txn, prefix)
	return m, false, err
}

// noteWritten updates the metadata cache and the fresh records with what
// a group's transaction wrote (err nil), or drops what they hold of its
// conversations (err: what Badger holds is not known).
func (s *Store) noteWritten(reqs []*commitReq, res []commitRes, written [][]history.Message, err error) {
	if s.metas == nil && s.fresh == nil {
		return
	}
	for i, r := range reqs {
		prefix := convPrefix(r.key)
		switch {
		case err != nil || r.del || res[i].err != nil:
			// A Delete, or not written (a commit refused by its checks
			// wrote nothing, but its ErrConflict may come of a write the
			// cache missed: one left by a crash, say).
			s.metas.drop(prefix)
			s.fresh.drop(r.key)
		case r.change.Forget != nil && r.change.Forget.Hard:
			// Marked for erasure (write): out of the cache, whose
			// conversations have no mark (groupMeta); its records are
			// erased next.
			s.metas.drop(prefix)
			s.fresh.drop(r.key)
		default:
			s.metas.put(string(prefix), res[i].meta)
			s.fresh.add(r.key, res[i].meta.Incarnation, written[i])
		}
	}
}

// commitStaged commits a change too big for one transaction.
//
// It first marks the conversation busy (a pending key of kind staged:
// every other commit on it fails with ErrConflict until the mark is
// gone), writes the appended records past NextSeq in as many
// transactions as it takes (their postings come later, see fold.go), then, in one transaction, the
// metadata, the listing entry and the removal of the mark. Erased ranges
// too big to go with it are marked for erasure in that transaction and
// deleted after it (hidden meanwhile by their Erased gap). If anything
// fails after the mark, the staged records are deleted again; a crash
// leaves the mark, and Open finishes the job.
func (s *Store) commitStaged(k history.Key, c history.Change) (history.Meta, error) {
	defer s.work(k)()
	prefix := convPrefix(k)
	var writes []history.Message
	var erased totals // what the erased ranges hold
	var from uint64   // the first sequence number staged
	err := s.updateMeta(prefix, func(txn *badger.Txn, m history.Meta) error {
		var err error
		if _, writes, err = s.apply(txn, k, prefix, m, c, 0, false); err != nil {
			return err
		}
		if c.Forget != nil && c.Forget.Hard {
			t, err := readTotals(txn, k)
			if err != nil {
				return err
			}
			if erased, err = countRanges(txn, prefix, c.Forget.Ranges, t.from()); err != nil {
				return err
			}
		}
		from = max(m.NextSeq, 1)
		return txn.Set(pendingKey(k), pending{kind: pendingStaged, ranges: []history.Range{{From: from, To: maxSeq}}}.append(nil))
	})
	if errors.Is(err, badger.ErrConflict) {
		err = history.ErrConflict
	}
	if err != nil {
		return history.Meta{}, err
	}
	out, err := s.landStaged(k, prefix, c, writes, erased)
	if err != nil {
		// Take the staged records out again, unless a Delete took over.
		if cerr := s.finishPending(k, pendingStaged); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return history.Meta{}, err
	}
	if c.Forget != nil && c.Forget.Hard {
		err = s.finishPending(k, pendingErase)
	}
	return out, err
}

// landStaged writes the staged records, then the metadata.
func (s *Store) landStaged(k history.Key, prefix []byte, c history.Change, writes []history.Message, erased totals) (history.Meta, error) {
	// The staged records are invisible until the metadata lands, and the
	// mark keeps every other commit off them: a write batch (which
	// splits into transactions itself, with no conflict tracking) does.
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	buf := make([]byte, 0, 512)
	for i := range writes {
		var err error
		if buf, err = setRecord(wb, prefix, &writes[i], buf); err != nil {
			return history.Meta{}, err
		}
	}
	if err := wb.Flush(); err != nil {
		return history.Meta{}, err
	}
	// The metadata, recomputed in its own transaction: the mark kept
	// every other commit away meanwhile.
	var out history.Meta
	s.genPre.Add(statsBump(c)) // before and after the changes can be seen (see tenantStats)
	err := s.updateMeta(prefix, func(txn *badger.Txn, m history.Meta) error {
		p, ok, err := readPending(txn, k)
		if err != nil {
			return err
		}
		if !ok || p.kind != pendingStaged {
			return history.ErrConflict // deleted meanwhile
		}
		if out, _, err = s.apply(txn, k, prefix, m, c, pendingStaged, false); err != nil {
			return err
		}
		if c.Forget != nil && c.Forget.Hard {
			t, err := readTotals(txn, k)
			if err != nil {
				return err
			}
			t.docs -= erased.docs
			t.terms -= erased.terms
			if err := setTotals(txn, k, t); err != nil {
				return err
			}
		}
		if err := setMeta(txn, prefix, &m, &out); err != nil {
			return err
		}
		if err := moveListing(txn, k, &m, &out); err != nil {
			return err
		}
		if c.Forget != nil && c.Forget.Hard {
			return txn.Set(pendingKey(k), pending{kind: pendingErase, ranges: c.Forget.Ranges}.append(nil))
		}
		return txn.Delete(pendingKey(k))
	})
	if err == nil && s.logs != nil {
		err = s.syncLogs()
	}
	s.genPost.Add(statsBump(c))
	if errors.Is(err, badger.ErrConflict) {
		err = history.ErrConflict
	}
	return out, err
}

// apply checks c against m, the conversation's metadata, and that no
// pending job (but one of kind own, the caller's) holds the conversation
// (unmarked: known to have none, see groupMeta), reads what c needs and
// returns the new metadata and the records to write, or ErrConflict.
func (s *Store) apply(txn *badger.Txn, k history.Key, prefix []byte, m history.Meta, c history.Change, own byte, unmarked bool) (history.Meta, []history.Message, error) {
	if err := c.Check(&m); err != nil {
		return history.Meta{}, nil, err
	}
	if !unmarked {
		s.commitMarkReads.Add(1)
		if p, busy, err := readPending(txn, k); err != nil || (busy && p.kind != own) {
			if err == nil {
				err = history.ErrConflict // being deleted, or a staged commit is landing
			}
			return history.Meta{}, nil, err
		}
	}
	var superseded []history.Message
	if c.Supersede != nil {
		err := iterate(txn, prefix, &m, c.Supersede.Seq, func(msg history.Message) bool {
			if msg.Active() {
				superseded = append(superseded, msg)
			}
			return true
		})
		if err != nil {
			return history.Meta{}, nil, err
		}
	}
	next, writes := history.Apply(m, c, superseded)
	return next, writes, nil
}

// write applies c to the conversation whose metadata is m in txn: the
// records (their postings come later, see fold.go), erased records
// deleted with their postings, the metadata and the listing entry, and
// returns the new metadata and the records written (unmarked: see
// apply). It may fail with badger.ErrTxnTooBig, leaving part of the
// change in txn.
func (s *Store) write(txn *badger.Txn, k history.Key, prefix []byte, m history.Meta, c history.Change, unmarked bool) (history.Meta, []history.Message, error) {
	next, writes, err := s.apply(txn, k, prefix, m, c, 0, unmarked)
	if err != nil {
		return history.Meta{}, nil, err
	}
	if next.Version == m.Version { // a summary landing: no activity, nothing indexed
		return next, nil, setMeta(txn, prefix, &m, &next)
	}
	buf := make([]byte, 0, 512)
	for i := range writes {
		if buf, err = setRecord(txn, prefix, &writes[i], buf); err != nil {
			return history.Meta{}, nil, err
		}
	}
	if f := c.Forget; f != nil && f.Hard {
		// The one commit that reads the totals: it uncounts what it
		// erases, and marks the records for erasure. Commit deletes them
		// with their postings right after (postings are shared by many
		// conversations, so they are never rewritten in a group of
		// commits, where a race with a purge would fail them all); the
		// Erased gap hides them meanwhile.
		t, err := readTotals(txn, k)
		if err != nil {
			return history.Meta{}, nil, err
		}
		erased, err := countRanges(txn, prefix, f.Ranges, t.from())
		if err != nil {
			return history.Meta{}, nil, err
		}
		t.docs -= erased.docs
		t.terms -= erased.terms
		if err := setTotals(txn, k, t); err != nil {
			return history.Meta{}, nil, err
		}
		if err := txn.Set(pendingKey(k), pending{kind: pendingErase, ranges: f.Ranges}.append(nil)); err != nil {
			return history.Meta{}, nil, err
		}
	}
	if err := setMeta(txn, prefix, &m, &next); err != nil {
		return history.Meta{}, nil, err
	}
	return next, writes, moveListing(txn, k, &m, &next)
}

// setMeta writes m, the metadata that replaces old: the summary's text
// under a key of its own, only when it changed (every commit rewrites the
// metadata; with kilobytes of summary inside, each one also rewrote and
// each read decoded those).
func setMeta(txn *badger.Txn, prefix []byte, old, m *history.Meta) error {
	stored := *m
	if s := m.Summary; s != nil {
		head := *s
		head.Text = ""
		stored.Summary = &head
		if o := old.Summary; o == nil || o.At != s.At || o.Text != s.Text {
			var err error
			if s.Text == "" {
				err = txn.Delete(summaryKey(prefix))
			} else {
				err = txn.Set(summaryKey(prefix), []byte(s.Text))
			}
			if err != nil {
				return err
			}
		}
	} else if old.Summary != nil {
		if err := txn.Delete(summaryKey(prefix)); err != nil {
			return err
		}
	}
	mv, err := history.MarshalMeta(&stored)
	if err != nil {
		return err
	}
	return txn.Set(metaKey(prefix), mv)
}
