package pgstore

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
)

// Search ranks a tenant's active messages (one conversation's when
// q.Conversation is set) against q.Text with search's BM25, in one
// repeatable-read transaction: the scope's statistics (the sum of its
// conversations' counters: no row every commit of a tenant would contend
// on), the messages holding a query term, found through the full-text
// index (tsv @@ query) with each term's frequency read from their
// tsvector, the metadata of the conversations hit (whose ranges say which
// messages are active), then the best messages' records.
func (s *Store) Search(ctx context.Context, tenant string, q history.SearchQuery) (hits []history.Hit, err error) {
	err = s.again(ctx, func() error { hits, err = s.search(ctx, tenant, q); return err })
	return hits, err
}

func (s *Store) search(ctx context.Context, tenant string, q history.SearchQuery) ([]history.Hit, error) {
	terms := search.QueryTerms(q.Text)
	if len(terms) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	var out []history.Hit
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		st, ok, err := scopeStats(ctx, tx, tenant, q.Conversation)
		if err != nil || !ok {
			return err
		}
		docsHit, df, err := termHits(ctx, tx, tenant, q.Conversation, terms)
		if err != nil || len(docsHit) == 0 {
			return err
		}
		metas, err := hitMetas(ctx, tx, tenant, docsHit)
		if err != nil {
			return err
		}
		hits := search.Top(rankHits(st, df, docsHit, metas), q.Limit)
		if len(hits) == 0 {
			return nil
		}
		out, err = readHits(ctx, tx, tenant, hits)
		return err
	})
	if err != nil {
		return nil, wrap("search "+tenant, err)
	}
	return out, nil
}

// docKey names a message of a tenant.
type docKey struct {
	conv string
	seq  uint64
}

// termDoc is a message holding a query term.
type termDoc struct {
	created int64
	dl      int
	tf      []int // by query term
}

// scopeStats reads the search statistics of the tenant, or of its
// conversation conv when set: the sum of the scope's conversations'
// counters. ok is false when conv does not exist.
func scopeStats(ctx context.Context, tx pgx.Tx, tenant, conv string) (st search.Stats, ok bool, err error) {
	var docs, nterms int64
	if conv != "" {
		err = tx.QueryRow(ctx, `SELECT docs, terms FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
			tenant, conv).Scan(&docs, &nterms)
	} else {
		err = tx.QueryRow(ctx, `SELECT coalesce(sum(docs), 0), coalesce(sum(terms), 0) FROM recall_conversations WHERE tenant = $1`,
			tenant).Scan(&docs, &nterms)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return search.Stats{}, false, nil
	}
	if err != nil {
		return search.Stats{}, false, err
	}
	return search.Stats{Docs: int(docs), Terms: int(nterms)}, true, nil
}

// termHits finds the messages in scope (the tenant's, or conv's when
// set) holding a query term, through the full-text index (tsv @@ query),
// with each term's frequency read from their tsvector; df counts each
// term's messages.
func termHits(ctx context.Context, tx pgx.Tx, tenant, conv string, terms []string) (map[docKey]*termDoc, []int, error) {
	sql := `SELECT u.lexeme, m.conversation, m.seq, u.positions[1], m.dl, m.created_at
FROM recall_messages m CROSS JOIN LATERAL unnest(m.tsv) AS u
WHERE m.tenant = $1 AND m.tsv @@ $2::text::tsquery AND u.lexeme = ANY($3::text[])`
	args := []any{tenant, tsquery(terms), terms}
	if conv != "" {
		sql += ` AND m.conversation = $4`
		args = append(args, conv)
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	docsHit := map[docKey]*termDoc{}
	df := make([]int, len(terms))
	index := make(map[string]int, len(terms))
	for i, t := range terms {
		index[t] = i
	}
	for rows.Next() {
		var term, conv string
		var seq, created int64
		var tf int16
		var dl int32
		if err := rows.Scan(&term, &conv, &seq, &tf, &dl, &created); err != nil {
			return nil, nil, err
		}
		i := index[term]
		df[i]++
		k := docKey{conv, uint64(seq)}
		d := docsHit[k]
		if d == nil {
			d = &termDoc{created: created, dl: int(dl), tf: make([]int, len(terms))}
			docsHit[k] = d
		}
		d.tf[i] = int(tf)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return docsHit, df, nil
}

// hitMetas reads the metadata of each conversation hit, whose ranges
// say which hits are active.
func hitMetas(ctx context.Context, tx pgx.Tx, tenant string, docsHit map[docKey]*termDoc) (map[string]*history.Meta, error) {
	var convs []string
	seen := map[string]bool{}
	for k := range docsHit {
		if !seen[k.conv] {
			seen[k.conv] = true
			convs = append(convs, k.conv)
		}
	}
	metas := make(map[string]*history.Meta, len(convs))
	rows, err := tx.Query(ctx, `SELECT conversation, meta, summary FROM recall_conversations WHERE tenant = $1 AND conversation = ANY($2)`, tenant, convs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var conv string
		var raw, rawSummary []byte
		if err := rows.Scan(&conv, &raw, &rawSummary); err != nil {
			return nil, err
		}
		m, err := readMeta(raw, rawSummary)
		if err != nil {
			return nil, err
		}
		metas[conv] = &m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return metas, nil
}

// rankHits scores the active messages hit with BM25 over the scope's
// statistics st and the terms' message counts df.
func rankHits(st search.Stats, df []int, docsHit map[docKey]*termDoc, metas map[string]*history.Meta) []search.Hit {
	idf := make([]float64, len(df))
	for i := range df {
		idf[i] = search.IDF(st.Docs, df[i])
	}
	avg := st.AvgLen()
	hits := make([]search.Hit, 0, len(docsHit))
	for k, d := range docsHit {
		m := metas[k.conv]
		if m == nil || k.seq >= m.NextSeq || m.FlagsAt(k.seq)&history.Inactive != 0 {
			continue
		}
		score := 0.0
		for i, tf := range d.tf {
			if tf > 0 {
				score += search.Score(idf[i], tf, d.dl, avg)
			}
		}
		hits = append(hits, search.Hit{Score: score, CreatedAt: d.created, Conversation: k.conv, Seq: k.seq})
	}
	return hits
}

// readHits reads the records of hits, in their order; a hit whose
// record is gone is left out.
func readHits(ctx context.Context, tx pgx.Tx, tenant string, hits []search.Hit) ([]history.Hit, error) {
	cs, seqs := make([]string, len(hits)), make([]int64, len(hits))
	for i, h := range hits {
		cs[i], seqs[i] = h.Conversation, int64(h.Seq)
	}
	rows, err := tx.Query(ctx, `SELECT m.conversation, m.seq, m.body FROM recall_messages m
JOIN unnest($2::text[], $3::bigint[]) AS h(conversation, seq) ON m.conversation = h.conversation AND m.seq = h.seq
WHERE m.tenant = $1`, tenant, cs, seqs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	bodies := make(map[docKey]history.Message, len(hits))
	for rows.Next() {
		var conv string
		var seq int64
		var b []byte
		if err := rows.Scan(&conv, &seq, &b); err != nil {
			return nil, err
		}
		msg, err := history.DecodeMessage(b, uint64(seq))
		if err != nil {
			return nil, err
		}
		bodies[docKey{conv, uint64(seq)}] = msg
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]history.Hit, 0, len(hits))
	for _, h := range hits {
		if msg, ok := bodies[docKey{h.Conversation, h.Seq}]; ok {
			out = append(out, history.Hit{Conversation: h.Conversation, Message: msg, Score: h.Score})
		}
	}
	return out, nil
}

// tsquery is the query matching a message holding any of terms (which
// search.Terms made: letters and digits only, nothing to escape).
func tsquery(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteByte('\'')
		b.WriteString(t)
		b.WriteByte('\'')
	}
	return b.String()
}
