package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// errClosed is a commit sent to a store that is closing.
var errClosed = errors.New("badgerstore: store closed")

// maxBatch bounds the commits one transaction groups.
const maxBatch = 256

// commitReq is one Commit waiting for the committer.
type commitReq struct {
	ctx    context.Context
	key    history.Key
	change history.Change
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
// instead of syncing the log once each. Each commit of a group keeps its
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
	if err := ctx.Err(); err != nil {
		return history.Meta{}, err
	}
	if err := s.CanCommit(); err != nil {
		return history.Meta{}, err
	}
	if s.noSync {
		// No fsync to share: commit here, in parallel with others, and go
		// through the committer only to stage a change too big for one
		// transaction. Badger's own conflict check orders racing commits.
		m, err := s.commitDirect(k, c)
		if !errors.Is(err, badger.ErrTxnTooBig) {
			if err != nil {
				return history.Meta{}, fmt.Errorf("badgerstore: commit %s: %w", k, err)
			}
			return m, nil
		}
	}
	req := &commitReq{ctx: ctx, key: k, change: c, done: make(chan commitRes, 1)}
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
func (s *Store) committer() {
	defer close(s.stopped)
	batch := make([]*commitReq, 0, maxBatch)
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
	more:
		for len(batch) < maxBatch {
			select {
			case req := <-s.commits:
				batch = append(batch, req)
			default:
				break more
			}
		}
		live := batch[:0]
		for _, req := range batch {
			if err := req.ctx.Err(); err != nil {
				req.done <- commitRes{err: err}
				continue
			}
			live = append(live, req)
		}
		for len(live) > 0 {
			live = live[s.commitGroup(live):]
		}
		clear(batch)
	}
}

// commitGroup commits as many of reqs as fit one transaction, from the
// first, answers them, and returns how many it took.
func (s *Store) commitGroup(reqs []*commitReq) int {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	res := make([]commitRes, len(reqs))
	metas := make(map[string]history.Meta, len(reqs)) // metadata as this group leaves it
	n := 0
	for ; n < len(reqs); n++ {
		r := reqs[n]
		prefix := convPrefix(r.key)
		m, err := s.groupMeta(txn, metas, prefix)
		if err == nil {
			var writes []history.Message
			if m, writes, err = apply(txn, prefix, m, r.change); err == nil {
				if err = setMessages(txn, prefix, writes); err == nil {
					err = setMeta(txn, prefix, &m)
				}
			}
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
		m, err := s.commitStaged(convPrefix(r.key), r.change)
		r.done <- commitRes{meta: m, err: err}
		return 1
	}
	if n < len(reqs) {
		// The next commit did not fit and the transaction may hold part
		// of it: commit the group without it, from scratch.
		txn.Discard()
		return s.commitGroup(reqs[:n])
	}
	err := txn.Commit()
	if errors.Is(err, badger.ErrConflict) {
		err = history.ErrConflict // a write outside the committer (Delete) raced
	}
	for i := range n {
		if err != nil {
			res[i] = commitRes{err: err}
		}
		reqs[i].done <- res[i]
	}
	return n
}

// commitDirect commits c in one transaction of its own.
func (s *Store) commitDirect(k history.Key, c history.Change) (history.Meta, error) {
	prefix := convPrefix(k)
	var out history.Meta
	err := s.db.Update(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, prefix)
		if err != nil {
			return err
		}
		var writes []history.Message
		if out, writes, err = apply(txn, prefix, m, c); err != nil {
			return err
		}
		if err := setMessages(txn, prefix, writes); err != nil {
			return err
		}
		return setMeta(txn, prefix, &out)
	})
	if errors.Is(err, badger.ErrConflict) {
		err = history.ErrConflict
	}
	return out, err
}

// groupMeta returns a conversation's metadata as the group has left it so
// far, or as stored.
func (s *Store) groupMeta(txn *badger.Txn, metas map[string]history.Meta, prefix []byte) (history.Meta, error) {
	if m, ok := metas[string(prefix)]; ok {
		return m, nil
	}
	m, _, err := readMeta(txn, prefix)
	return m, err
}

// commitStaged writes c's messages in batches, then the metadata.
func (s *Store) commitStaged(prefix []byte, c history.Change) (history.Meta, error) {
	var writes []history.Message
	err := s.db.View(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, prefix)
		if err == nil {
			_, writes, err = apply(txn, prefix, m, c)
		}
		return err
	})
	if err != nil {
		return history.Meta{}, err
	}
	txn := s.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	buf := make([]byte, 0, 512)
	for i := 0; i < len(writes); {
		buf = history.AppendMessage(buf[:0], &writes[i])
		err := txn.Set(msgKey(prefix, writes[i].Seq), bytes.Clone(buf))
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return history.Meta{}, err
			}
			txn = s.db.NewTransaction(true)
			continue // the same message, in the next transaction
		}
		if err != nil {
			return history.Meta{}, err
		}
		i++
	}
	if err := txn.Commit(); err != nil {
		return history.Meta{}, err
	}
	// The metadata, recomputed in its own transaction: nothing else
	// commits meanwhile (this runs on the committer).
	var out history.Meta
	err = s.db.Update(func(txn *badger.Txn) error {
		m, _, err := readMeta(txn, prefix)
		if err == nil {
			if out, _, err = apply(txn, prefix, m, c); err == nil {
				err = setMeta(txn, prefix, &out)
			}
		}
		return err
	})
	return out, err
}

// apply checks c against m, the conversation's metadata, reads what c
// needs and returns the new metadata and the records to write, or
// ErrConflict.
func apply(txn *badger.Txn, prefix []byte, m history.Meta, c history.Change) (history.Meta, []history.Message, error) {
	if err := c.Check(&m); err != nil {
		return history.Meta{}, nil, err
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

func setMessages(txn *badger.Txn, prefix []byte, writes []history.Message) error {
	buf := make([]byte, 0, 512)
	for i := range writes {
		buf = history.AppendMessage(buf[:0], &writes[i])
		if err := txn.Set(msgKey(prefix, writes[i].Seq), bytes.Clone(buf)); err != nil {
			return err
		}
	}
	return nil
}

func setMeta(txn *badger.Txn, prefix []byte, m *history.Meta) error {
	mv, err := history.MarshalMeta(m)
	if err != nil {
		return err
	}
	return txn.Set(metaKey(prefix), mv)
}
