package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
)

// trimExchangesSQL deletes a conversation's records older than its
// newest history.MaxExchangeRecords.
var trimExchangesSQL = fmt.Sprintf(`DELETE FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 AND id <
 (SELECT id FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 ORDER BY id DESC OFFSET %d LIMIT 1)`,
	history.MaxExchangeRecords-1)

// AppendExchanges inserts recs and trims the conversation's records to
// the newest history.MaxExchangeRecords, in one transaction that holds
// the conversation's row (FOR SHARE): a Delete, which removes that row
// before the records, waits for it and then erases them too, and an
// append after a Delete finds no row and writes nothing. Records of
// another incarnation are not written.
func (s *Store) AppendExchanges(ctx context.Context, k history.Key, recs []history.ExchangeRecord) error {
	if len(recs) == 0 {
		return nil
	}
	bodies := make([][]byte, len(recs))
	for i := range recs {
		if !history.ValidExchangeID(recs[i].ID) {
			return fmt.Errorf("pgstore: append exchanges %s: id %q is not of the form xch_<16 hex digits>", k, recs[i].ID)
		}
		var err error
		if bodies[i], err = history.MarshalExchange(&recs[i]); err != nil {
			return err
		}
	}
	err := s.again(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			var inc int64
			err := tx.QueryRow(ctx, `SELECT incarnation FROM recall_conversations WHERE tenant = $1 AND conversation = $2 FOR SHARE`,
				k.Tenant, k.Conversation).Scan(&inc)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // gone: so are its records
			}
			if err != nil {
				return err
			}
			b := &pgx.Batch{}
			for i := range recs {
				if r := recs[i].Incarnation; r != 0 && r != uint64(inc) {
					continue
				}
				b.Queue(`INSERT INTO recall_exchanges (tenant, conversation, id, body) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
					k.Tenant, k.Conversation, recs[i].ID, bodies[i])
			}
			b.Queue(trimExchangesSQL, k.Tenant, k.Conversation)
			return tx.SendBatch(ctx, b).Close()
		})
	})
	return wrap("append exchanges "+k.String(), err)
}

// batchInsertSQL inserts the records of several conversations, each only
// if its conversation is stored, under the record's incarnation (0: any),
// holding the conversations' rows FOR SHARE as AppendExchanges does.
const batchInsertSQL = `WITH r AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[]) AS r(tenant, conversation, id, body, inc)),
live AS (
  SELECT c.tenant, c.conversation, c.incarnation FROM recall_conversations c
  WHERE (c.tenant, c.conversation) IN (SELECT tenant, conversation FROM r)
  FOR SHARE)
INSERT INTO recall_exchanges (tenant, conversation, id, body)
SELECT r.tenant, r.conversation, r.id, r.body FROM r JOIN live ON live.tenant = r.tenant AND live.conversation = r.conversation
WHERE r.inc = 0 OR r.inc = live.incarnation
ON CONFLICT DO NOTHING`

// batchTrimSQL trims each of several conversations' records to the newest
// history.MaxExchangeRecords.
var batchTrimSQL = fmt.Sprintf(`DELETE FROM recall_exchanges e USING (
  SELECT k.tenant, k.conversation, (SELECT x.id FROM recall_exchanges x WHERE x.tenant = k.tenant AND x.conversation = k.conversation
    ORDER BY x.id DESC OFFSET %d LIMIT 1) AS cut
  FROM unnest($1::text[], $2::text[]) AS k(tenant, conversation)) c
WHERE e.tenant = c.tenant AND e.conversation = c.conversation AND e.id < c.cut`, history.MaxExchangeRecords-1)

// AppendExchangeBatch implements history.ExchangeBatcher: the records of
// every conversation in batch, under AppendExchanges' rules, in one
// transaction sent in one round trip (BEGIN, the inserts in one
// statement, the trims in another, COMMIT). The exchange-record writer
// gathers a batch from many requests: one durable commit for all of them,
// where one transaction a conversation cost a WAL flush each.
func (s *Store) AppendExchangeBatch(ctx context.Context, batch []history.KeyedExchanges) error {
	var tenants, convs, ids []string
	var bodies [][]byte
	var incs []int64
	var kt, kc []string
	seen := map[history.Key]bool{}
	for _, e := range batch {
		for i := range e.Records {
			if !history.ValidExchangeID(e.Records[i].ID) {
				return fmt.Errorf("pgstore: append exchanges %s: id %q is not of the form xch_<16 hex digits>", e.Key, e.Records[i].ID)
			}
			b, err := history.MarshalExchange(&e.Records[i])
			if err != nil {
				return err
			}
			tenants, convs, ids = append(tenants, e.Key.Tenant), append(convs, e.Key.Conversation), append(ids, e.Records[i].ID)
			bodies, incs = append(bodies, b), append(incs, int64(e.Records[i].Incarnation))
			if !seen[e.Key] {
				seen[e.Key] = true
				kt, kc = append(kt, e.Key.Tenant), append(kc, e.Key.Conversation)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(batchInsertSQL, tenants, convs, ids, bodies, incs)
	b.Queue(batchTrimSQL, kt, kc)
	b.Queue("COMMIT")
	err := s.again(ctx, func() error { return s.runTx(ctx, b) })
	return wrap(fmt.Sprintf("append exchange batch (%d conversations)", len(kt)), err)
}

var _ history.ExchangeBatcher = (*Store)(nil)

// Exchanges reads up to limit of k's records older than before (all, if
// before is ""), newest first.
func (s *Store) Exchanges(ctx context.Context, k history.Key, before string, limit int) (out []history.ExchangeRecord, err error) {
	err = s.again(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, `SELECT body FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 AND ($3 = '' OR id < $3)
 ORDER BY id DESC LIMIT $4`, k.Tenant, k.Conversation, before, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var b []byte
			if err := rows.Scan(&b); err != nil {
				return err
			}
			r, err := history.UnmarshalExchange(b)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, wrap("exchanges "+k.String(), err)
}
