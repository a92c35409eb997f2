package badgerstore

import (
	"bytes"
	"context"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/search"
)

// Postings are written after the records they describe, not with them:
// one Badger entry per distinct term of each message made a commit of a
// turn of prose five times slower, on the request path. A commit writes
// the records and leaves the conversation's index watermark (totals.indexed,
// in the metadata record) where it was, with a dirty key naming the
// conversation; Search analyses the records past the watermark as it
// meets them (so what it finds never depends on the folder), and the
// folder writes their postings and moves the watermark, a bounded batch
// per transaction, through the committer (so it never conflicts with a
// group of commits).

// Fold batches: at most this many messages or postings per transaction.
const (
	foldMessages = 256
	foldPostings = 8192
)

// defaultIndexBacklog is Options.IndexBacklog's default.
const defaultIndexBacklog = 4096

// foldBatch indexes the next batch of the conversation's records past its
// watermark in txn, and reports whether more are left.
// It returns how many records it indexed.
func foldBatch(txn *badger.Txn, k history.Key, prefix []byte, m history.Meta) (more bool, folded int, err error) {
	if _, busy, err := readPending(txn, k); err != nil || busy {
		return false, 0, err // its owner deletes or lands it; the next fold sees
	}
	if m.Version == 0 {
		return false, 0, nil // deleted
	}
	t, err := readTotals(txn, k)
	if err != nil {
		return false, 0, err
	}
	n, postings, last := 0, 0, t.from()-1
	iterErr := iterate(txn, prefix, &m, t.from()-1, func(msg history.Message) bool {
		if n == foldMessages || postings >= foldPostings {
			more = true
			return false
		}
		var wrote int
		if wrote, err = setPostings(txn, k, &msg, &t); err != nil {
			return false
		}
		n++
		postings += wrote
		last = msg.Seq
		return true
	})
	if err == nil {
		err = iterErr
	}
	if err != nil {
		return false, 0, err
	}
	if more {
		t.indexed = last + 1
	} else {
		t.indexed = max(m.NextSeq, 1)
		if err := txn.Set(listKey(k, m.UpdatedAt), listClean); err != nil {
			return false, 0, err
		}
	}
	return more, n, setTotals(txn, k, t)
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
	for _, k := range keys {
		if err != nil {
			break
		}
		err = s.foldConversation(k)
	}
	return err
}

// foldConversation indexes k's records past its watermark, a batch per
// transaction, through the committer.
func (s *Store) foldConversation(k history.Key) error {
	for {
		req := &commitReq{ctx: context.Background(), key: k, fold: true, done: make(chan commitRes, 1)}
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
		if res.err != nil || !res.more {
			if errors.Is(res.err, history.ErrConflict) {
				return nil // a delete got there first
			}
			return res.err
		}
	}
}

// noteBacklog counts n records written without postings and wakes the
// folder past Options.IndexBacklog of them; with a negative IndexBacklog
// it folds k at once.
func (s *Store) noteBacklog(k history.Key, n int) error {
	if n == 0 {
		return nil
	}
	if s.indexBacklog < 0 {
		return s.foldConversation(k)
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
