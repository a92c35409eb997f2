package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// lockSQL reads the metadata row and locks it until the transaction ends.
const lockSQL = `SELECT meta, summary FROM recall_conversations WHERE tenant = $1 AND conversation = $2 FOR UPDATE`

// supersededSQL reads the messages a supersede flags.
const supersededSQL = `SELECT seq, body FROM recall_messages WHERE tenant = $1 AND conversation = $2 AND seq > $3 AND seq < $4 ORDER BY seq`

// insertSQL appends message rows, any number in one statement.
const insertSQL = `INSERT INTO recall_messages (tenant, conversation, seq, dl, created_at, body, tsv)
SELECT $1, $2, r.seq, r.dl, r.created_at, r.body, r.tsv
FROM unnest($3::bigint[], $4::int[], $5::bigint[], $6::bytea[], $7::tsvector[]) AS r(seq, dl, created_at, body, tsv)`

// eraseSQL deletes the records of a hard forget's ranges (their search
// entries go with them) and takes them out of the conversation's search
// statistics.
const eraseSQL = `WITH gone AS (
  DELETE FROM recall_messages m USING unnest($3::bigint[], $4::bigint[]) AS r(lo, hi)
  WHERE m.tenant = $1 AND m.conversation = $2 AND m.seq BETWEEN r.lo AND r.hi
  RETURNING m.dl)
UPDATE recall_conversations SET docs = docs - (SELECT count(*) FROM gone), terms = terms - (SELECT coalesce(sum(dl), 0) FROM gone)
WHERE tenant = $1 AND conversation = $2`

// upsertSQL writes the metadata row, its summary too (and the summary's
// covered-through, through: see load); docs and terms add to the stored
// statistics.
const upsertSQL = `INSERT INTO recall_conversations (tenant, conversation, version, updated_at, meta, docs, terms, summaries, incarnation, summary, through)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (tenant, conversation) DO UPDATE SET version = excluded.version, summaries = excluded.summaries, updated_at = excluded.updated_at,
  incarnation = excluded.incarnation, meta = excluded.meta, summary = excluded.summary, through = excluded.through,
  docs = recall_conversations.docs + excluded.docs, terms = recall_conversations.terms + excluded.terms`

// The one-statement commit (see Commit): the metadata row is written only
// if the stored head is still the one the change was computed from
// ($15-$17) and it is written split (splitSQL, metarow.go), or, for a
// new conversation, only if there is none; the messages only if it was.
// It answers 1 if it committed, 0 if not (nothing written). It leaves the
// summary column alone: a plain commit does not change the summary.
//
// The leased variants also free the lease row the change carries
// (Change.Lease) if it committed, in the same statement: $18 and $19 (in
// the creating one, $16 and $17) are the lease's name and holder.
const (
	fastMessages = `,
msgs AS (
  INSERT INTO recall_messages (tenant, conversation, seq, dl, created_at, body, tsv)
  SELECT $1, $2, r.seq, r.dl, r.created_at, r.body, r.tsv
  FROM unnest($10::bigint[], $11::int[], $12::bigint[], $13::bytea[], $14::tsvector[]) AS r(seq, dl, created_at, body, tsv)
  WHERE EXISTS (SELECT FROM head))
SELECT count(*) FROM head`
	fastUpdateHead = `WITH head AS (
  UPDATE recall_conversations SET version = $3, summaries = $4, updated_at = $5, incarnation = $6, meta = $7,
    docs = docs + $8, terms = terms + $9
  WHERE tenant = $1 AND conversation = $2 AND version = $15 AND summaries = $16 AND incarnation = $17 AND ` + splitSQL + `
  RETURNING 1)`
	fastCreateHead = `WITH head AS (
  INSERT INTO recall_conversations (tenant, conversation, version, summaries, updated_at, incarnation, meta, docs, terms, summary)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $15)
  ON CONFLICT (tenant, conversation) DO NOTHING
  RETURNING 1)`
	fastUpdateSQL       = fastUpdateHead + fastMessages
	fastCreateSQL       = fastCreateHead + fastMessages
	fastUpdateLeasedSQL = fastUpdateHead + `,
rel AS (UPDATE recall_leases ` + freeSQL + ` WHERE name = $18 AND holder = $19 AND EXISTS (SELECT FROM head))` + fastMessages
	fastCreateLeasedSQL = fastCreateHead + `,
rel AS (UPDATE recall_leases ` + freeSQL + ` WHERE name = $16 AND holder = $17 AND EXISTS (SELECT FROM head))` + fastMessages
)

// summarySQL lands a summary computed against the metadata whose head is
// $6-$8: the row's head and both its columns are written only if that is
// still its head (the metadata is then the base itself: every other
// change moves the head), in one statement, with the summary's
// covered-through ($9).
const summarySQL = `UPDATE recall_conversations SET summaries = $3, meta = $4, summary = $5, through = $9
WHERE tenant = $1 AND conversation = $2 AND version = $6 AND summaries = $7 AND incarnation = $8`

// summaryLeasedSQL is summarySQL that, if the summary landed, also frees
// the conversation's summary lease row ($10, held by $11) in the same
// statement, and answers 1 (0 if nothing landed): landing is the last
// thing a summary job does under its lease, so its release then costs
// no round trip (see freedBy).
const summaryLeasedSQL = `WITH head AS (` + summarySQL + `
  RETURNING 1),
rel AS (UPDATE recall_leases ` + freeSQL + ` WHERE name = $10 AND holder = $11 AND EXISTS (SELECT FROM head))
SELECT count(*) FROM head`

// Commit applies c in one transaction. With c.Base (the metadata the
// change was computed from) and no supersede, forget, summary or import,
// that is one statement, one round trip: the metadata row is updated only
// if its head (Version, Summaries, Incarnation) is still c.Base's, which
// makes the stored metadata c.Base itself, and the messages are inserted
// only if it was (a data-modifying CTE). Otherwise, or if the head moved,
// it takes two round trips (three with a supersede): BEGIN with the
// metadata row read FOR UPDATE, which orders racing commits of the
// conversation; c.Check against it (the optimistic check: c was computed
// from c.Version, and fails with history.ErrConflict if another commit
// landed since); then every write and COMMIT in one pipelined batch. Two
// commits racing to create a conversation collide on its keys: the loser
// gets history.ErrConflict.
//
// When Commit returns nil the transaction is committed, as durable as the
// server's synchronous_commit makes it. An error leaves nothing, except
// when the connection broke during COMMIT (history.ErrUnavailable): then
// the commit may have landed.
//
// c.Lease, held by this Store, is dropped when the change commits: its
// row, if it is in the table, is freed in the commit's own statement
// or transaction, which therefore costs no round trip more; a lease held
// in memory is let go. A commit that fails leaves it held. Likewise a
// summary that lands alone on its base frees the conversation's summary
// lease row this Store holds (the landing job's: landing is the last
// thing it does under the lease) in the landing's statement, so that the
// job's release costs no round trip (see commitSummary).
func (s *Store) Commit(ctx context.Context, k history.Key, c history.Change) (history.Meta, error) {
	if err := ctx.Err(); err != nil {
		return history.Meta{}, err
	}
	if err := s.sole.ready(ctx); err != nil {
		return history.Meta{}, wrap("commit "+k.String(), err)
	}
	lease, inTable := s.heldInTable(c.Lease)
	if _, sole := s.sole.sole(); lease != nil && !inTable && !sole {
		// Held in memory since the Store was the sole writer: its row
		// first (see publish).
		if err := s.publish(ctx, lease.name, lease.h); err != nil {
			return history.Meta{}, wrap("commit "+k.String(), err)
		}
		inTable = true
	}
	var rel *leaseTake // the row the commit frees
	keep := false      // the commit keeps the lease (keep.go)
	if inTable {
		s.heldMu.Lock()
		keep = s.keeps(lease.name, lease.h)
		s.heldMu.Unlock()
		if !keep {
			rel = &leaseTake{name: lease.name, holder: lease.h.holder}
		}
	}
	if lease == nil {
		unfence, err := s.fence(ctx, k)
		if err != nil {
			return history.Meta{}, wrap("commit "+k.String(), err)
		}
		defer unfence()
	}
	m, wrote, err := s.commitOn(ctx, k, c, rel)
	if err != nil && Unavailable(err) && ctx.Err() == nil {
		// After a database restart the pool's idle connections are dead,
		// and only their first use tells: a session the server ended
		// while idle left its FATAL message on the socket, read only
		// once the statement was written.
		s.pool.Reset()
		switch {
		case !wrote: // nothing was written
			m, _, err = s.commitOn(ctx, k, c, rel)
		case fast(&c):
			m, err = s.resend(ctx, k, &c, rel, err)
		}
	}
	if err == nil {
		s.merger.committed(len(c.Append))
		if lease != nil {
			switch {
			case keep:
				s.kept(lease.name, lease.h)
			case rel != nil:
				lease.dropped()
			default:
				lease.Release() // in memory, unless published since
			}
			c.Lease.Dropped()
		}
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
// rel, if set, is a lease row the commit frees.
func (s *Store) commitOn(ctx context.Context, k history.Key, c history.Change, rel *leaseTake) (m history.Meta, wrote bool, err error) {
	if landsSummary(&c) {
		if m, ok, err := s.commitSummary(ctx, k, &c, &wrote); err != nil || ok {
			return m, wrote, err
		}
		// Not against c.Base: decide against the stored metadata.
	}
	var f *fastCommit
	moved := false // the head moved since c.Base
	if fast(&c) {
		f, _ = prepareFast(&c)
	}
	if f != nil {
		f.rel = rel
	}
	if f != nil && f.base.Version != 0 {
		r := s.batcher.commit(ctx, k, f)
		switch r.outcome {
		case batchCommitted:
			return f.next, true, nil
		case batchFailed:
			return history.Meta{}, r.wrote, r.err
		case batchMoved:
			moved = true
		case batchRefused: // alone, below
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return history.Meta{}, false, err
	}
	defer conn.Release()
	if f != nil && !moved {
		var ok bool
		m, ok, err = s.commitFast(ctx, conn.Conn(), k, f, &wrote)
		if err != nil || ok {
			return m, wrote, err
		}
		// The head moved since c.Base: decide against the stored one.
	}
	m, err = s.commit(ctx, conn.Conn(), k, c, rel, &wrote)
	if err != nil {
		rollback(conn.Conn())
	}
	return m, wrote, err
}

// resend sends c (fast) once more on a fresh connection, after its
// statement was written and the connection failed, its fate unknown
// (first). The statement writes only on c's base, so it cannot land
// twice: if it lands now, the first did not; if the head moved, the
// first landed when the stored metadata is the very record it wrote (its
// time and version with it). Otherwise the fate stays unknown: first.
func (s *Store) resend(ctx context.Context, k history.Key, c *history.Change, rel *leaseTake, first error) (history.Meta, error) {
	f, ok := prepareFast(c)
	if !ok {
		return history.Meta{}, first
	}
	f.rel = rel
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return history.Meta{}, first
	}
	defer conn.Release()
	var wrote bool
	m, landed, err := s.commitFast(ctx, conn.Conn(), k, f, &wrote)
	switch {
	case err != nil:
		return history.Meta{}, first
	case landed:
		return m, nil
	}
	var stored []byte
	err = conn.QueryRow(ctx, storedMetaSQL, k.Tenant, k.Conversation).Scan(&stored)
	if err == nil && bytes.Equal(stored, f.meta) {
		return f.next, nil
	}
	return history.Meta{}, first
}

// storedMetaSQL reads a conversation's meta column.
const storedMetaSQL = `SELECT meta FROM recall_conversations WHERE tenant = $1 AND conversation = $2`

// fast reports whether c can commit in one statement (see Commit).
func fast(c *history.Change) bool {
	return c.Base != nil && c.Base.Version == c.Version && c.Supersede == nil && c.Forget == nil && c.Summary == nil && !c.Import
}

// landsSummary reports whether c only lands a summary, computed against
// c.Base: commitSummary's one statement then commits it if the stored
// head is still c.Base's.
func landsSummary(c *history.Change) bool {
	return c.Base != nil && c.Base.Version == c.Version && c.Summary != nil && len(c.Append) == 0 && c.Supersede == nil &&
		c.Forget == nil && c.Cut == 0 && c.Exchange == nil && !c.Seal && c.Metadata == nil && !c.Import
}

// commitSummary lands c (landsSummary) on c.Base in one statement; ok
// reports whether it did: false if c is stale against c.Base, or the
// stored head moved since (nothing written either way). If this Store
// holds the conversation's summary lease in the table (the job landing
// c does), the statement frees its row when c lands (summaryLeasedSQL).
func (s *Store) commitSummary(ctx context.Context, k history.Key, c *history.Change, wrote *bool) (history.Meta, bool, error) {
	base := *c.Base
	if c.Check(&base) != nil {
		return history.Meta{}, false, nil
	}
	next, _ := history.Apply(base, *c, nil)
	mv, sv := metaRow(&next)
	args := []any{k.Tenant, k.Conversation, int32(next.Summaries), mv, sv,
		int64(base.Version), int32(base.Summaries), int64(base.Incarnation), summaryThrough(&next)}
	name := history.LeaseName(history.LeaseSummary, k)
	h := s.heldRow(name)
	*wrote = true
	var n int64
	if h == nil {
		tag, err := s.pool.Exec(ctx, summarySQL, args...)
		if err != nil {
			return history.Meta{}, false, err
		}
		n = tag.RowsAffected()
	} else if err := s.pool.QueryRow(ctx, summaryLeasedSQL, append(args, name, h.holder)...).Scan(&n); err != nil {
		return history.Meta{}, false, err
	}
	if n != 1 {
		*wrote = false
		return history.Meta{}, false, nil
	}
	if h != nil {
		s.freedBy(name, h)
	}
	return next, true, nil
}

// fastCommit is a change that can commit in one statement, computed
// against its base.
type fastCommit struct {
	base       history.Meta
	next       history.Meta
	meta, summ []byte // next's row (metaRow)
	w          *writeSet
	rel        *leaseTake // a lease row the commit frees, if set
}

// prepareFast computes c (fast) against c.Base; ok is false if the one
// statement cannot commit it (it changes the summary).
func prepareFast(c *history.Change) (*fastCommit, bool) {
	base := *c.Base
	// Apply appends to these: never into the caller's arrays.
	base.Gaps, base.Episodes = slices.Clip(base.Gaps), slices.Clip(base.Episodes)
	next, writes := history.Apply(base, *c, nil)
	if next.Summary != base.Summary {
		return nil, false // the statement leaves the summary alone
	}
	f := &fastCommit{base: base, next: next, w: newWriteSet(len(writes))}
	f.meta, f.summ = metaRow(&f.next)
	for i := range writes {
		f.w.add(&writes[i])
	}
	return f, true
}

// commitFast commits f in one statement; ok reports whether the stored
// head was f's base (else nothing was written).
func (s *Store) commitFast(ctx context.Context, conn *pgx.Conn, k history.Key, f *fastCommit, wrote *bool) (history.Meta, bool, error) {
	next, w := &f.next, f.w
	args := []any{k.Tenant, k.Conversation, int64(next.Version), int32(next.Summaries), next.UpdatedAt, int64(next.Incarnation), f.meta,
		int64(len(w.seqs)), w.terms, w.seqs, w.dls, w.created, w.bodies, w.tsvs}
	sql := fastCreateSQL
	if f.base.Version != 0 {
		sql = fastUpdateSQL
		args = append(args, int64(f.base.Version), int32(f.base.Summaries), int64(f.base.Incarnation))
	} else {
		args = append(args, f.summ)
	}
	if f.rel != nil {
		sql = fastCreateLeasedSQL
		if f.base.Version != 0 {
			sql = fastUpdateLeasedSQL
		}
		args = append(args, f.rel.name, f.rel.holder)
	}
	*wrote = true
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return history.Meta{}, false, err
	}
	return f.next, n == 1, nil
}

func (s *Store) commit(ctx context.Context, conn *pgx.Conn, k history.Key, c history.Change, rel *leaseTake, wrote *bool) (history.Meta, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockSQL, k.Tenant, k.Conversation)
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	var raw, rawSummary []byte
	if err == nil {
		err = br.QueryRow().Scan(&raw, &rawSummary)
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
		if m, err = readMeta(raw, rawSummary); err != nil {
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
	mv, sv := metaRow(&next)

	b = &pgx.Batch{}
	if f := c.Forget; f != nil && f.Hard && len(f.Ranges) > 0 {
		lo, hi := make([]int64, len(f.Ranges)), make([]int64, len(f.Ranges))
		for i, r := range f.Ranges {
			lo[i], hi[i] = int64(r.From), int64(r.To)
		}
		b.Queue(eraseSQL, k.Tenant, k.Conversation, lo, hi)
	}
	var docs, terms int64
	if len(writes) > 0 {
		w := newWriteSet(len(writes))
		for i := range writes {
			w.add(&writes[i])
		}
		b.Queue(insertSQL, k.Tenant, k.Conversation, w.seqs, w.dls, w.created, w.bodies, w.tsvs)
		docs, terms = int64(len(writes)), w.terms
	}
	b.Queue(upsertSQL, k.Tenant, k.Conversation, int64(next.Version), next.UpdatedAt, mv, docs, terms, int32(next.Summaries), int64(next.Incarnation), sv, summaryThrough(&next))
	if rel != nil {
		b.Queue(freeRowSQL, rel.name, rel.holder)
	}
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

// writeSet is the column arrays of the messages a commit writes.
type writeSet struct {
	seqs    []int64
	dls     []int32
	created []int64
	bodies  [][]byte
	tsvs    []postings // their search terms (tsvector.go)
	terms   int64
}

func newWriteSet(n int) *writeSet {
	return &writeSet{seqs: make([]int64, 0, n), dls: make([]int32, 0, n), created: make([]int64, 0, n),
		bodies: make([][]byte, 0, n), tsvs: make([]postings, 0, n)}
}

func (w *writeSet) add(m *history.Message) {
	terms, dl := search.Analyze(m.Text())
	w.seqs = append(w.seqs, int64(m.Seq))
	w.dls = append(w.dls, int32(dl))
	w.created = append(w.created, m.CreatedAt.UnixNano())
	w.bodies = append(w.bodies, history.AppendMessage(nil, m))
	w.tsvs = append(w.tsvs, postings{terms: terms})
	w.terms += int64(dl)
}
