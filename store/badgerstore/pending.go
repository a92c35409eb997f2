package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// A pending key marks a conversation with unfinished work spread over
// several transactions: a Delete removing its records, a staged commit
// whose records sit past NextSeq, the erasure of ranges too big for their
// commit. While it is there every commit on the conversation fails with
// ErrConflict (so a new conversation with the same id never meets the old
// records); readers never see the records concerned (the metadata hides
// them). Whoever set it finishes the work; a crash leaves it, and Open
// finishes it.

// Kinds of pending work.
const (
	pendingDelete byte = 'd' // every record goes, the metadata already gone
	pendingStaged byte = 's' // the staged records go: their metadata never landed
	pendingErase  byte = 'e' // the records of the ranges go: the metadata erased them
)

// maxSeq is the end of an open range.
const maxSeq = math.MaxUint64

// purgeBatch bounds the records one purge transaction deletes.
const purgeBatch = 256

// pending is a pending key's value: its kind and the records it removes.
type pending struct {
	kind   byte
	ranges []history.Range
}

func (p pending) append(dst []byte) []byte {
	dst = append(dst, p.kind)
	dst = binary.AppendUvarint(dst, uint64(len(p.ranges)))
	for _, r := range p.ranges {
		dst = binary.AppendUvarint(dst, r.From)
		dst = binary.AppendUvarint(dst, r.To)
	}
	return dst
}

func decodePending(v []byte) (pending, error) {
	bad := errors.New("badgerstore: bad pending record")
	if len(v) < 1 {
		return pending{}, bad
	}
	p := pending{kind: v[0]}
	v = v[1:]
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)) {
		return pending{}, bad
	}
	v = v[w:]
	for range n {
		from, w := binary.Uvarint(v)
		if w <= 0 {
			return pending{}, bad
		}
		v = v[w:]
		to, w := binary.Uvarint(v)
		if w <= 0 {
			return pending{}, bad
		}
		v = v[w:]
		p.ranges = append(p.ranges, history.Range{From: from, To: to})
	}
	return p, nil
}

func pendingKey(k history.Key) []byte {
	b := make([]byte, 0, 3+len(k.Tenant)+len(k.Conversation))
	b = append(b, 'x', 0)
	b = append(b, k.Tenant...)
	b = append(b, 0)
	return append(b, k.Conversation...)
}

func readPending(txn *badger.Txn, k history.Key) (pending, bool, error) {
	item, err := txn.Get(pendingKey(k))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return pending{}, false, nil
	}
	if err != nil {
		return pending{}, false, err
	}
	var p pending
	err = item.Value(func(v []byte) error {
		var err error
		p, err = decodePending(v)
		return err
	})
	return p, err == nil, err
}

// Delete erases the conversation: one transaction removes its metadata
// and listing entry and marks it pending deletion (readers see it gone at
// once, commits on it fail with ErrConflict), then its records and
// postings go in bounded transactions, then the mark. A crash in between
// is finished by the next Open. Nothing here blocks writes to other
// conversations (no DropPrefix).
func (s *Store) Delete(ctx context.Context, k history.Key) error {
	if err := s.CanCommit(); err != nil {
		return err
	}
	defer s.work(k)()
	err := s.viaCommitter(ctx, &commitReq{ctx: ctx, key: k, del: true, done: make(chan commitRes, 1)})
	if err == nil {
		// Not cut short by ctx: the conversation stays blocked until
		// the work is done (or a later Delete, commit or Open does it).
		err = s.finishPending(k, pendingDelete)
	}
	if err != nil {
		return fmt.Errorf("badgerstore: delete %s: %w", k, err)
	}
	return nil
}

// viaCommitter hands req to the committer and waits for its answer: once
// handed over, whatever ctx says, as the answer says whether there is
// pending work to finish.
func (s *Store) viaCommitter(ctx context.Context, req *commitReq) error {
	select {
	case s.commits <- req:
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case res := <-req.done:
		return res.err
	case <-s.stopped: // the committer stopped before taking it
		return errClosed
	}
}

// work records that the caller is doing k's pending work (or is about to
// leave some) until the returned function is called: a commit that runs
// into a mark nobody works on finishes the work itself (see unstick).
func (s *Store) work(k history.Key) (done func()) {
	s.workMu.Lock()
	if s.working == nil {
		s.working = map[history.Key]int{}
	}
	s.working[k]++
	s.workMu.Unlock()
	return func() {
		s.workMu.Lock()
		if s.working[k]--; s.working[k] == 0 {
			delete(s.working, k)
		}
		s.workMu.Unlock()
	}
}

// unstick finishes k's pending work if it has some that nobody is doing:
// left by a Delete or a staged commit that failed half way (a full disk,
// a closed store). A commit that ran into the mark calls it; the work is
// then done before the commit is retried.
func (s *Store) unstick(k history.Key) error {
	s.workMu.Lock()
	busy := s.working[k] > 0
	s.workMu.Unlock()
	if busy {
		return nil
	}
	var p pending
	var ok bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		p, ok, err = readPending(txn, k)
		return err
	})
	if err != nil || !ok {
		return err
	}
	defer s.work(k)()
	return s.finishPending(k, p.kind)
}

// deleteMeta removes the conversation's metadata (m) and listing entry and
// marks it pending deletion. A conversation with no metadata and nothing
// pending is left alone: there is nothing to delete.
func deleteMeta(txn *badger.Txn, k history.Key, m *history.Meta) error {
	_, busy, err := readPending(txn, k)
	if err != nil {
		return err
	}
	if m.Version == 0 && !busy {
		return nil
	}
	if m.Version > 0 {
		if err := txn.Delete(metaKey(convPrefix(k))); err != nil {
			return err
		}
		if err := txn.Delete(summaryKey(convPrefix(k))); err != nil {
			return err
		}
		if err := txn.Delete(listKey(k, m.UpdatedAt)); err != nil {
			return err
		}
		if err := txn.Delete(totalsKey(k)); err != nil {
			return err
		}
	}
	return txn.Set(pendingKey(k), pending{kind: pendingDelete, ranges: []history.Range{{From: 0, To: maxSeq}}}.append(nil))
}

// finishPending does the conversation's pending work if it is of kind:
// deletes the records of its ranges with their postings, a bounded batch
// per transaction, then the mark. Work of another kind is left to whoever
// started it (a Delete takes over from a staged commit).
func (s *Store) finishPending(k history.Key, kind byte) error {
	s.erasures.Add(1) // before anything is erased (see foldWrite)
	prefix := convPrefix(k)
	var p pending
	err := s.db.View(func(txn *badger.Txn) error {
		var ok bool
		var err error
		p, ok, err = readPending(txn, k)
		if err == nil && (!ok || p.kind != kind) {
			p.kind = 0
		}
		return err
	})
	if err != nil || p.kind == 0 {
		return err
	}
	for _, r := range p.ranges {
		for from := r.From; ; {
			next, done, err := s.purge(k, prefix, from, r.To)
			if errors.Is(err, badger.ErrConflict) {
				continue // another purge of the same records raced: again
			}
			if err != nil {
				return err
			}
			if done {
				break
			}
			from = next
		}
	}
	if err := s.dropSegmentSpans(k, p.ranges); err != nil {
		return err
	}
	if kind == pendingDelete {
		if err := s.purgeExchanges(prefix); err != nil {
			return err
		}
	}
	// What the side database no longer holds is gone from disk before the
	// mark goes: a crash after cannot bring back the postings (the erased
	// words, pointing at records that are gone) or records.
	if err := s.side.Sync(); err != nil {
		return err
	}
	for {
		err := s.db.Update(func(txn *badger.Txn) error {
			q, ok, err := readPending(txn, k)
			if err != nil || !ok || q.kind != kind {
				return err
			}
			return txn.Delete(pendingKey(k))
		})
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
}

// purge deletes up to purgeBatch records with from <= seq <= to: their
// postings in the side database (unpostAll), then the records in one
// transaction. It returns where the next batch starts, and done when none
// is left.
func (s *Store) purge(k history.Key, prefix []byte, from, to uint64) (next uint64, done bool, err error) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	var keys, vals [][]byte
	err = func() error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = append(bytes.Clone(prefix), 's')
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(msgKey(prefix, from)); it.Valid() && len(keys) < purgeBatch; it.Next() {
			item := it.Item()
			if binary.BigEndian.Uint64(item.Key()[len(prefix)+1:]) > to {
				break
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			keys, vals = append(keys, item.KeyCopy(nil)), append(vals, v)
		}
		return nil
	}()
	if err != nil || len(keys) == 0 {
		return 0, true, err
	}
	// Their postings first, in the side database (side.go).
	msgs := make([]history.Message, len(keys))
	for i, key := range keys {
		if msgs[i], err = history.DecodeMessage(vals[i], binary.BigEndian.Uint64(key[len(prefix)+1:])); err != nil {
			return 0, false, err
		}
	}
	if err := s.unpostAll(k, msgs); err != nil {
		return 0, false, err
	}
	var t totals // uncounted already, by whoever set the mark
	deleted := 0
	for i, key := range keys {
		seq := binary.BigEndian.Uint64(key[len(prefix)+1:])
		if err := deleteRecord(txn, prefix, &msgs[i], &t); err != nil {
			if errors.Is(err, badger.ErrTxnTooBig) && deleted > 0 {
				break // commit what fits; this record again next time
			}
			return 0, false, err
		}
		deleted++
		next = seq + 1
	}
	if err := txn.Commit(); err != nil {
		return 0, false, err
	}
	return next, next == 0 || next > to, nil
}

// countRanges returns what the indexed records of ranges hold (those
// before indexed), for the totals.
func countRanges(txn *badger.Txn, prefix []byte, ranges []history.Range, indexed uint64) (totals, error) {
	var t totals
	opts := badger.DefaultIteratorOptions
	opts.Prefix = append(bytes.Clone(prefix), 's')
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	for _, r := range ranges {
		for it.Seek(msgKey(prefix, r.From)); it.Valid(); it.Next() {
			item := it.Item()
			seq := binary.BigEndian.Uint64(item.Key()[len(prefix)+1:])
			if seq > r.To {
				break
			}
			if seq >= indexed {
				continue // not counted
			}
			err := item.Value(func(v []byte) error {
				msg, err := history.DecodeMessage(v, seq)
				if err == nil {
					_, dl := search.Analyze(msg.Text())
					t.docs++
					t.terms += dl
				}
				return err
			})
			if err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// recoverPending finishes the work a crash interrupted (see pending).
func (s *Store) recoverPending() error {
	type job struct {
		k    history.Key
		kind byte
	}
	var jobs []job
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = []byte{'x', 0}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			tenant, conv, ok := splitTenant(it.Item().Key())
			if !ok {
				continue
			}
			err := it.Item().Value(func(v []byte) error {
				if len(v) > 0 {
					jobs = append(jobs, job{history.Key{Tenant: string(tenant), Conversation: string(conv)}, v[0]})
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, j := range jobs {
		if err != nil {
			break
		}
		err = s.finishPending(j.k, j.kind)
	}
	return err
}

// dropSegmentSpans deletes k's segment spans that ranges cover whole
// (their postings are gone already), and k's id from those segments'
// tables, a bounded batch per transaction of the side database.
func (s *Store) dropSegmentSpans(k history.Key, ranges []history.Range) error {
	covered := func(sg segment) bool {
		return slices.ContainsFunc(ranges, func(r history.Range) bool { return r.From <= sg.first && sg.last <= r.To })
	}
	for {
		n := 0
		err := s.side.Update(func(txn *badger.Txn) error {
			segs, err := segmentsOf(txn, k)
			if err != nil {
				return err
			}
			for _, sg := range segs {
				if n == purgeBatch {
					break
				}
				if covered(sg) {
					if err := txn.Delete(segConvKey(k, sg.id)); err != nil {
						return err
					}
					if err := unlist(txn, k, sg); err != nil {
						return err
					}
					n++
				}
			}
			return nil
		})
		if errors.Is(err, badger.ErrConflict) {
			continue
		}
		if err != nil || n < purgeBatch {
			return err
		}
	}
}

// unpostAll removes msgs' postings (all k's) from the segments in the
// side database, in as few transactions as they fit in. Removing a
// posting that is not there changes nothing, so a purge a crash
// interrupted does it again harmlessly.
func (s *Store) unpostAll(k history.Key, msgs []history.Message) error {
	for len(msgs) > 0 {
		done := 0
		err := s.side.Update(func(txn *badger.Txn) error {
			segs, err := segmentsOf(txn, k)
			if err != nil {
				return err
			}
			for i := range msgs {
				if err := unpost(txn, k, segs, &msgs[i]); err != nil {
					if errors.Is(err, badger.ErrTxnTooBig) && done > 0 {
						return nil // commit what fits; this one again next time
					}
					return err
				}
				done++
			}
			return nil
		})
		if errors.Is(err, badger.ErrConflict) {
			continue // another purge of the same postings raced: again
		}
		if err != nil {
			return err
		}
		msgs = msgs[done:]
	}
	return nil
}
