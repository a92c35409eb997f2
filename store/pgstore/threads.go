package pgstore

import (
	"context"

	"github.com/recallproxy/recall/history"
)

var _ history.ThreadLister = (*Store)(nil)

// Threads implements history.ThreadLister: one range read of the
// conversations' primary key. A thread's id is its conversation's, the
// separator '~' and characters that all sort below 0x7f (COLLATE "C").
func (s *Store) Threads(ctx context.Context, k history.Key) ([]string, error) {
	from := history.ThreadID(k.Conversation, "")
	to := k.Conversation + "\x7f"
	var out []string
	err := s.again(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `SELECT conversation FROM recall_conversations
WHERE tenant = $1 AND conversation > $2 AND conversation < $3 ORDER BY conversation`, k.Tenant, from, to)
		if err != nil {
			return wrap("list threads", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return wrap("list threads", err)
			}
			out = append(out, id)
		}
		return wrap("list threads", rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
