package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/search"
)

// Postings are written after the records they describe, not with them:
// analysing each message and writing its postings made a commit of a
// turn of prose five times slower, on the request path. A commit writes
// the records and leaves the conversation's index watermark
// (totals.indexed) where it was, with its listing entry dirty; Search
// analyses the records past the watermark as it meets them (so what it
// finds never depends on the folder). The folder, woken every
// IndexBacklog messages, indexes every dirty conversation's new records
// through the committer (so it never conflicts with a group of commits),
// up to foldMessages per transaction, as one segment per tenant
// (segment.go), and moves the watermarks.

// foldMessages bounds the records one fold transaction indexes (one
// segment per tenant): a fold holds the committer meanwhile. With 1,024,
// each fold held it 35-90 ms, and every commit waited (load script,
// closed loop, 1,000 conversations: about 1,300 req/s); with 256, 7-40
// ms (about 1,630 req/s), for about twice the keys per message.
const foldMessages = 256

// defaultIndexBacklog is Options.IndexBacklog's default.
const defaultIndexBacklog = 4096

// foldGroup indexes, in one transaction, the records past the watermarks
// of req.fold's conversations, in order, up to budget of them: one
// segment per tenant (segment.go). It answers with the conversations left
// to fold. Only the committer calls it.
func (s *Store) foldGroup(req *commitReq, budget int) {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	builders := map[string]*segBuilder{}
	var tenants []string
	var left []history.Key
	docs := 0
	err := func() error {
		for i, k := range req.fold {
			if docs >= budget {
				left = req.fold[i:]
				return nil
			}
			b := builders[k.Tenant]
			if b == nil {
				b = &segBuilder{}
				builders[k.Tenant] = b
				tenants = append(tenants, k.Tenant)
			}
			n, more, err := foldInto(txn, k, b, budget-docs)
			if err != nil {
				return err
			}
			docs += n
			if more {
				left = req.fold[i:]
				return nil
			}
		}
		return nil
	}()
	seg := s.segment
	if err == nil && docs > 0 {
		for _, tenant := range tenants {
			if b := builders[tenant]; b.docs > 0 {
				seg++
				if err = b.write(txn, tenant, seg); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = txn.Set(segCounterKey, binary.BigEndian.AppendUint64(nil, seg))
		}
	}
	if err == nil {
		if s.beforeFoldCommit != nil {
			s.beforeFoldCommit()
		}
		s.genPre.Add(uint64(docs)) // before and after the changes can be seen (see tenantStats)
		err = txn.Commit()
		s.genPost.Add(uint64(docs))
	}
	if (errors.Is(err, badger.ErrTxnTooBig) || errors.Is(err, badger.ErrConflict)) && budget > 1 {
		// Too big; or, with relaxed writes (commits outside the
		// committer), a commit landed on one of these conversations
		// meanwhile: again, with fewer of them.
		txn.Discard()
		s.foldGroup(req, budget/2)
		return
	}
	if err == nil {
		s.segment = seg
	}
	req.done <- commitRes{left: left, err: err}
}

// foldInto adds k's records past its watermark to b, up to budget of
// them, moves the watermark in txn and marks the listing entry clean if
// none is left. It returns how many it added and whether some are left.
func foldInto(txn *badger.Txn, k history.Key, b *segBuilder, budget int) (n int, more bool, err error) {
	if _, busy, err := readPending(txn, k); err != nil || busy {
		return 0, false, err // its owner deletes or lands it; the next fold sees
	}
	prefix := convPrefix(k)
	m, ok, err := readMetaHead(txn, prefix)
	if err != nil || !ok || m.Version == 0 {
		return 0, false, err // deleted
	}
	t, err := readTotals(txn, k)
	if err != nil {
		return 0, false, err
	}
	last := t.from() - 1
	err = iterate(txn, prefix, &m, t.from()-1, func(msg history.Message) bool {
		if n == budget {
			more = true
			return false
		}
		t.terms += b.add(k.Conversation, &msg)
		t.docs++
		n++
		last = msg.Seq
		return true
	})
	if err != nil {
		return 0, false, err
	}
	if more {
		t.indexed = last + 1
	} else {
		t.indexed = max(m.NextSeq, 1)
		if err := txn.Set(listKey(k, m.UpdatedAt), listClean); err != nil {
			return 0, false, err
		}
	}
	return n, more, setTotals(txn, k, t)
}

// Fold indexes every record written so far that has no postings yet, and
// returns when it is done (the folder does it in the background; tests
// and operator tools may want it now).
func (s *Store) Fold() error {
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
	return s.fold(keys)
}

// fold indexes keys' records past their watermarks, a transaction of at
// most foldMessages records at a time, through the committer.
func (s *Store) fold(keys []history.Key) error {
	for len(keys) > 0 {
		req := &commitReq{ctx: context.Background(), fold: keys, done: make(chan commitRes, 1)}
		select {
		case <-s.closing:
			return errClosed
		default:
		}
		select {
		case s.commits <- req:
		case <-s.closing:
			return errClosed
		}
		var res commitRes
		select {
		case res = <-req.done:
		case <-s.stopped: // the committer stopped before taking it
			return errClosed
		}
		if res.err != nil {
			return res.err
		}
		keys = res.left
	}
	return nil
}

// noteBacklog counts n records written without postings and wakes the
// folder past Options.IndexBacklog of them; with a negative IndexBacklog
// it folds k at once.
func (s *Store) noteBacklog(k history.Key, n int) error {
	if n == 0 {
		return nil
	}
	if s.indexBacklog < 0 {
		return s.fold([]history.Key{k})
	}
	if s.backlog.Add(int64(n)) >= int64(s.indexBacklog) {
		s.backlog.Store(0)
		select {
		case s.foldNow <- struct{}{}:
		default: // already awake
		}
	}
	return nil
}

// folder folds whenever noteBacklog wakes it, until Close.
func (s *Store) folder() {
	defer close(s.folded)
	for {
		select {
		case <-s.foldNow:
		case <-s.closing:
			return
		}
		if err := s.Fold(); err != nil && !errors.Is(err, errClosed) && s.logger != nil {
			s.logger.Warn("indexing messages for search failed; the next fold retries", "component", "badgerstore", "error", err.Error())
		}
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
		p, dl := search.Analyze(msg.Raw)
		docs = append(docs, backlogDoc{seq: msg.Seq, created: msg.CreatedAt.UnixNano(), active: msg.Active(), postings: p, dl: dl})
		return true
	})
	return docs, err
}
