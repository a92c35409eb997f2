package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// lockSQL reads the metadata row and locks it until the transaction ends.
const lockSQL = `SELECT meta FROM recall_conversations WHERE tenant = $1 AND conversation = $2 FOR UPDATE`

// supersededSQL reads the messages a supersede flags.
const supersededSQL = `SELECT seq, body FROM recall_messages WHERE tenant = $1 AND conversation = $2 AND seq > $3 AND seq < $4 ORDER BY seq`

// insertSQL appends message rows, any number in one statement.
const insertSQL = `INSERT INTO recall_messages (tenant, conversation, seq, dl, body)
SELECT $1, $2, * FROM unnest($3::bigint[], $4::int[], $5::bytea[])`

// postSQL writes search postings, any number in one statement.
const postSQL = `INSERT INTO recall_postings (tenant, conversation, seq, term, tf, dl, created_at)
SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::int[], $6::int[], $7::bigint[])`

// eraseSQL deletes the records of a hard forget's ranges and takes them
// out of the conversation's search statistics.
const eraseSQL = `WITH gone AS (
  DELETE FROM recall_messages m USING unnest($3::bigint[], $4::bigint[]) AS r(lo, hi)
  WHERE m.tenant = $1 AND m.conversation = $2 AND m.seq BETWEEN r.lo AND r.hi
  RETURNING m.dl)
UPDATE recall_conversations SET docs = docs - (SELECT count(*) FROM gone), terms = terms - (SELECT coalesce(sum(dl), 0) FROM gone)
WHERE tenant = $1 AND conversation = $2`

// erasePostingsSQL deletes the postings of a hard forget's ranges.
const erasePostingsSQL = `DELETE FROM recall_postings p USING unnest($3::bigint[], $4::bigint[]) AS r(lo, hi)
WHERE p.tenant = $1 AND p.conversation = $2 AND p.seq BETWEEN r.lo AND r.hi`

// upsertSQL writes the metadata row; docs and terms add to the stored
// statistics.
const upsertSQL = `INSERT INTO recall_conversations (tenant, conversation, version, updated_at, meta, docs, terms, summaries, incarnation)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (tenant, conversation) DO UPDATE SET version = excluded.version, summaries = excluded.summaries, updated_at = excluded.updated_at,
  incarnation = excluded.incarnation,
  meta = excluded.meta, docs = recall_conversations.docs + excluded.docs, terms = recall_conversations.terms + excluded.terms`

// Commit applies c in one transaction, in two round trips (three with a
// supersede): BEGIN with the metadata row read FOR UPDATE, which orders
// racing commits of the conversation; c.Check against it (the optimistic
// check: c was computed from c.Version, and fails with
// history.ErrConflict if another commit landed since); then every write
// and COMMIT in one pipelined batch. Two commits racing to create a
// conversation collide on its keys: the loser gets history.ErrConflict.
//
// When Commit returns nil the transaction is committed, as durable as the
// server's synchronous_commit makes it. An error leaves nothing, except
// when the connection broke during COMMIT (history.ErrUnavailable): then
// the commit may have landed.
func (s *Store) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if err := ctx.Err(); err != nil {
		return history.Meta{}, err
	}
	m, wrote, err := s.commitOn(ctx, k, c)
	if err != nil && !wrote && Unavailable(err) && ctx.Err() == nil {
		// Nothing was written: after a database restart the pool's idle
		// connections are dead, and only their first use tells.
		s.pool.Reset()
		m, _, err = s.commitOn(ctx, k, c)
	}
	if err != nil {
		if conflict(err) {
			err = history.ErrConflict
		}
		if errors.Is(err, history.ErrConflict) || errors.Is(err, history.ErrStale) {
			return history.Meta{}, fmt.Errorf("pgstore: commit %s: %w", k, err)
		}
		return history.Meta{}, wrap("commit "+k.String(), err)
	}
	return m, nil
}

// commitOn runs commit on a connection of the pool; wrote reports
// whether the writes were sent (the commit's fate is then unknown if the
// connection broke).
func (s *Store) commitOn(ctx context.Context, k history.Key, c history.Change) (m history.Meta, wrote bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return history.Meta{}, false, err
	}
	defer conn.Release()
	m, err = s.commit(ctx, conn.Conn(), k, c, &wrote)
	if err != nil {
		rollback(conn.Conn())
	}
	return m, wrote, err
}

func (s *Store) commit(ctx context.Context, conn *pgx.Conn, k history.Key, c history.Change, wrote *bool) (history.Meta, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockSQL, k.Tenant, k.Conversation)
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	var raw []byte
	if err == nil {
		err = br.QueryRow().Scan(&raw)
	}
	if cerr := br.Close(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr
	}
	var m history.Meta
	switch {
	case errors.Is(err, pgx.ErrNoRows): // a new conversation
	case err != nil:
		return history.Meta{}, err
	default:
		if m, err = history.UnmarshalMeta(raw); err != nil {
			return history.Meta{}, err
		}
	}
	if err := c.Check(&m); err != nil {
		return history.Meta{}, err
	}
	var superseded []history.Message
	if c.Supersede != nil {
		if superseded, err = readActive(ctx, conn, k, &m, c.Supersede.Seq); err != nil {
			return history.Meta{}, err
		}
	}
	next, writes := history.Apply(m, c, superseded)
	mv, err := history.MarshalMeta(&next)
	if err != nil {
		return history.Meta{}, err
	}

	b = &pgx.Batch{}
	if f := c.Forget; f != nil && f.Hard && len(f.Ranges) > 0 {
		lo, hi := make([]int64, len(f.Ranges)), make([]int64, len(f.Ranges))
		for i, r := range f.Ranges {
			lo[i], hi[i] = int64(r.From), int64(r.To)
		}
		b.Queue(eraseSQL, k.Tenant, k.Conversation, lo, hi)
		b.Queue(erasePostingsSQL, k.Tenant, k.Conversation, lo, hi)
	}
	var docs, terms int64
	if len(writes) > 0 {
		w := newWriteSet(len(writes))
		for i := range writes {
			w.add(&writes[i])
		}
		b.Queue(insertSQL, k.Tenant, k.Conversation, w.seqs, w.dls, w.bodies)
		if len(w.pSeqs) > 0 {
			b.Queue(postSQL, k.Tenant, k.Conversation, w.pSeqs, w.pTerms, w.pTFs, w.pDLs, w.pTimes)
		}
		docs, terms = int64(len(writes)), w.terms
	}
	b.Queue(upsertSQL, k.Tenant, k.Conversation, int64(next.Version), next.UpdatedAt, mv, docs, terms, int32(next.Summaries), int64(next.Incarnation))
	b.Queue("COMMIT")
	*wrote = true
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return history.Meta{}, err
	}
	return next, nil
}

// readActive reads the active messages after seq (those a supersede
// flags), with the flags m gives them.
func readActive(ctx context.Context, conn *pgx.Conn, k history.Key, m *history.Meta, after uint64) ([]history.Message, error) {
	rows, err := conn.Query(ctx, supersededSQL, k.Tenant, k.Conversation, int64(after), int64(m.NextSeq))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []history.Message
	for rows.Next() {
		var seq int64
		var b []byte
		if err := rows.Scan(&seq, &b); err != nil {
			return nil, err
		}
		msg, err := history.DecodeMessage(b, uint64(seq))
		if err != nil {
			return nil, err
		}
		msg.Flags |= m.FlagsAt(msg.Seq)
		if msg.Active() {
			out = append(out, msg)
		}
	}
	return out, rows.Err()
}

// writeSet is the column arrays of the messages and postings a commit
// writes.
type writeSet struct {
	seqs   []int64
	dls    []int32
	bodies [][]byte
	terms  int64

	pSeqs  []int64
	pTerms []string
	pTFs   []int32
	pDLs   []int32
	pTimes []int64
}

func newWriteSet(n int) *writeSet {
	return &writeSet{seqs: make([]int64, 0, n), dls: make([]int32, 0, n), bodies: make([][]byte, 0, n)}
}

func (w *writeSet) add(m *history.Message) {
	postings, dl := search.Analyze(m.Raw)
	w.seqs = append(w.seqs, int64(m.Seq))
	w.dls = append(w.dls, int32(dl))
	w.bodies = append(w.bodies, history.AppendMessage(nil, m))
	w.terms += int64(dl)
	created := m.CreatedAt.UnixNano()
	for _, p := range postings {
		w.pSeqs = append(w.pSeqs, int64(m.Seq))
		w.pTerms = append(w.pTerms, p.Term)
		w.pTFs = append(w.pTFs, int32(p.TF))
		w.pDLs = append(w.pDLs, int32(dl))
		w.pTimes = append(w.pTimes, created)
	}
}
