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
		var st search.Stats
		var docs, nterms int64
		var err error
		if q.Conversation != "" {
			err = tx.QueryRow(ctx, `SELECT docs, terms FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
				tenant, q.Conversation).Scan(&docs, &nterms)
		} else {
			err = tx.QueryRow(ctx, `SELECT coalesce(sum(docs), 0), coalesce(sum(terms), 0) FROM recall_conversations WHERE tenant = $1`,
				tenant).Scan(&docs, &nterms)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		st = search.Stats{Docs: int(docs), Terms: int(nterms)}

		sql := `SELECT u.lexeme, m.conversation, m.seq, u.positions[1], m.dl, m.created_at
FROM recall_messages m CROSS JOIN LATERAL unnest(m.tsv) AS u
WHERE m.tenant = $1 AND m.tsv @@ $2::text::tsquery AND u.lexeme = ANY($3::text[])`
		args := []any{tenant, tsquery(terms), terms}
		if q.Conversation != "" {
			sql += ` AND m.conversation = $4`
			args = append(args, q.Conversation)
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		type docKey struct {
			conv string
			seq  uint64
		}
		type doc struct {
			created int64
			dl      int
			tf      []int // by query term
		}
		docsHit := map[docKey]*doc{}
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
				rows.Close()
				return err
			}
			i := index[term]
			df[i]++
			k := docKey{conv, uint64(seq)}
			d := docsHit[k]
			if d == nil {
				d = &doc{created: created, dl: int(dl), tf: make([]int, len(terms))}
				docsHit[k] = d
			}
			d.tf[i] = int(tf)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(docsHit) == 0 {
			return nil
		}

		// Which hits are active: the metadata of each conversation hit.
		var convs []string
		seen := map[string]bool{}
		for k := range docsHit {
			if !seen[k.conv] {
				seen[k.conv] = true
				convs = append(convs, k.conv)
			}
		}
		metas := make(map[string]*history.Meta, len(convs))
		rows, err = tx.Query(ctx, `SELECT conversation, meta, summary FROM recall_conversations WHERE tenant = $1 AND conversation = ANY($2)`, tenant, convs)
		if err != nil {
			return err
		}
		for rows.Next() {
			var conv string
			var raw, rawSummary []byte
			if err := rows.Scan(&conv, &raw, &rawSummary); err != nil {
				rows.Close()
				return err
			}
			m, err := readMeta(raw, rawSummary)
			if err != nil {
				rows.Close()
				return err
			}
			metas[conv] = &m
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}

		idf := make([]float64, len(terms))
		for i := range terms {
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
		hits = search.Top(hits, q.Limit)
		if len(hits) == 0 {
			return nil
		}

		// The records of the best.
		cs, seqs := make([]string, len(hits)), make([]int64, len(hits))
		for i, h := range hits {
			cs[i], seqs[i] = h.Conversation, int64(h.Seq)
		}
		rows, err = tx.Query(ctx, `SELECT m.conversation, m.seq, m.body FROM recall_messages m
JOIN unnest($2::text[], $3::bigint[]) AS h(conversation, seq) ON m.conversation = h.conversation AND m.seq = h.seq
WHERE m.tenant = $1`, tenant, cs, seqs)
		if err != nil {
			return err
		}
		bodies := make(map[docKey]history.Message, len(hits))
		for rows.Next() {
			var conv string
			var seq int64
			var b []byte
			if err := rows.Scan(&conv, &seq, &b); err != nil {
				rows.Close()
				return err
			}
			msg, err := history.DecodeMessage(b, uint64(seq))
			if err != nil {
				rows.Close()
				return err
			}
			bodies[docKey{conv, uint64(seq)}] = msg
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		out = make([]history.Hit, 0, len(hits))
		for _, h := range hits {
			if msg, ok := bodies[docKey{h.Conversation, h.Seq}]; ok {
				out = append(out, history.Hit{Conversation: h.Conversation, Message: msg, Score: h.Score})
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrap("search "+tenant, err)
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
