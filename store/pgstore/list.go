package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
)

// List returns a page of a tenant's conversations by last activity,
// through the (tenant, updated_at, conversation) index: each statement
// reads one chunk of the index from the page's start (keyset paging), so
// the cost follows the page (plus Skip), not the tenant's conversations.
// A page of Keep-filtered conversations reads on in chunks until it is
// full.
func (s *Store) List(ctx context.Context, tenant string, q history.ListQuery) (page []history.Entry, more bool, err error) {
	err = s.again(ctx, func() error { page, more, err = s.list(ctx, tenant, q); return err })
	return page, more, err
}

func (s *Store) list(ctx context.Context, tenant string, q history.ListQuery) ([]history.Entry, bool, error) {
	if q.Limit <= 0 {
		return nil, false, errors.New("pgstore: list: limit must be positive")
	}
	var page []history.Entry
	more := false
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The cursor: after the conversation named by q.After, where it
		// stands now.
		curTime, curID := int64(math.MaxInt64), "\U0010FFFF"
		if q.Oldest {
			curTime, curID = math.MinInt64, ""
		}
		if q.After != "" {
			err := tx.QueryRow(ctx, `SELECT updated_at FROM recall_conversations WHERE tenant = $1 AND conversation = $2`,
				tenant, q.After).Scan(&curTime)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if err == nil {
				curID = q.After
			} // else deleted since: from the top
		}
		before := int64(math.MaxInt64)
		if q.UpdatedBefore > 0 {
			before = q.UpdatedBefore
		}
		sql := `SELECT conversation, meta, summary, updated_at FROM recall_conversations
WHERE tenant = $1 AND updated_at < $2 AND (updated_at, conversation) < ($3, $4)
ORDER BY updated_at DESC, conversation DESC LIMIT $5 OFFSET $6`
		if q.Oldest {
			sql = `SELECT conversation, meta, summary, updated_at FROM recall_conversations
WHERE tenant = $1 AND updated_at < $2 AND (updated_at, conversation) > ($3, $4)
ORDER BY updated_at, conversation LIMIT $5 OFFSET $6`
		}
		skip := max(q.Skip, 0)
		chunk := q.Limit + 1
		for {
			rows, err := tx.Query(ctx, sql, tenant, before, curTime, curID, chunk, skip)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
				var id string
				var raw, rawSummary []byte
				if err := rows.Scan(&id, &raw, &rawSummary, &curTime); err != nil {
					rows.Close()
					return err
				}
				curID = id
				m, err := readMeta(raw, rawSummary)
				if err != nil {
					rows.Close()
					return fmt.Errorf("list %s: %w", id, err)
				}
				if q.Keep != nil && !q.Keep(&m) {
					continue
				}
				if len(page) == q.Limit {
					more = true
					break
				}
				page = append(page, history.Entry{Conversation: id, Meta: m})
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if more || n < chunk {
				return nil
			}
			skip = 0
			chunk = min(2*chunk, 1000)
		}
	})
	if err != nil {
		return nil, false, wrap("list "+tenant, err)
	}
	return page, more, nil
}

// Namespaces skips through the primary key's tenants, one index probe
// per namespace returned (a recursive query: PostgreSQL has no skip scan).
func (s *Store) Namespaces(ctx context.Context, prefix, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, errors.New("pgstore: namespaces: limit must be positive")
	}
	var out []string
	err := s.again(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `WITH RECURSIVE t(tenant) AS (
  (SELECT tenant FROM recall_conversations WHERE tenant >= $1 AND tenant > $2 ORDER BY tenant LIMIT 1)
  UNION ALL
  SELECT (SELECT c.tenant FROM recall_conversations c WHERE c.tenant > t.tenant ORDER BY c.tenant LIMIT 1)
  FROM t WHERE t.tenant IS NOT NULL AND starts_with(t.tenant, $1)
)
SELECT tenant FROM t WHERE tenant IS NOT NULL AND starts_with(tenant, $1) LIMIT $3`, prefix, after, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var ns string
			if err := rows.Scan(&ns); err != nil {
				rows.Close()
				return err
			}
			out = append(out, ns)
		}
		return rows.Err()
	})
	return out, err
}
