package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
)

// trimExchangesSQL deletes a conversation's records older than its
// newest history.MaxExchangeRecords.
var trimExchangesSQL = fmt.Sprintf(`DELETE FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 AND id <
 (SELECT id FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 ORDER BY id DESC OFFSET %d LIMIT 1)`,
	history.MaxExchangeRecords-1)

// AppendExchanges inserts recs and trims the conversation's records to
// the newest history.MaxExchangeRecords (when history.TrimDue: between
// trims Exchanges lists the newest only), in one transaction that holds
// the conversation's row FOR KEY SHARE: a Delete, which removes that row
// before the records, waits for it and then erases them too, and an
// append after a Delete finds no row and writes nothing. Records of
// another incarnation are not written. The lock does not wait for a
// commit updating the row, nor holds one up: a commit never changes the
// row's key or its incarnation (a new incarnation is a new row).
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
			err := tx.QueryRow(ctx, `SELECT incarnation FROM recall_conversations WHERE tenant = $1 AND conversation = $2 FOR KEY SHARE`,
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
			if history.TrimDue(recs) {
				b.Queue(trimExchangesSQL, k.Tenant, k.Conversation)
			}
			return tx.SendBatch(ctx, b).Close()
		})
	})
	return wrap("append exchanges "+k.String(), err)
}

// batchInsertSQL inserts the records of many conversations in one
// statement, each only if its conversation is stored, under each
// record's incarnation (0: any), holding the conversation's row FOR KEY
// SHARE as AppendExchanges does. LATERAL keeps each lookup on the primary key,
// one index probe a record in the arrays' order, which is the lock order
// (a plain join of the arrays against the table was planned over whole
// tables).
const batchInsertSQL = `INSERT INTO recall_exchanges (tenant, conversation, id, body)
SELECT r.tenant, r.conversation, r.id, r.body
FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[]) AS r(tenant, conversation, id, body, inc)
CROSS JOIN LATERAL (SELECT incarnation FROM recall_conversations c
  WHERE c.tenant = r.tenant AND c.conversation = r.conversation FOR KEY SHARE) c
WHERE r.inc = 0 OR r.inc = c.incarnation
ON CONFLICT DO NOTHING`

// AppendExchangeBatch implements history.ExchangeBatcher: the records of
// every conversation in batch, under AppendExchanges' rules, in one
// transaction sent in one round trip (BEGIN, one insert for them all, a
// conversation's trim when history.TrimDue, COMMIT). The exchange-record
// writer gathers a batch from many requests: one durable commit and one
// statement for all of them, where a transaction a conversation cost
// four round trips and a WAL flush each, and a statement a conversation
// a tenth of a millisecond of the server's CPU a request.
func (s *Store) AppendExchangeBatch(ctx context.Context, batch []history.KeyedExchanges) error {
	type recs struct {
		ids    []string
		bodies [][]byte
		incs   []int64
	}
	var keys []history.Key
	byKey := map[history.Key]*recs{}
	for _, e := range batch {
		for i := range e.Records {
			if !history.ValidExchangeID(e.Records[i].ID) {
				return fmt.Errorf("pgstore: append exchanges %s: id %q is not of the form xch_<16 hex digits>", e.Key, e.Records[i].ID)
			}
			b, err := history.MarshalExchange(&e.Records[i])
			if err != nil {
				return err
			}
			r := byKey[e.Key]
			if r == nil {
				r = &recs{}
				byKey[e.Key] = r
				keys = append(keys, e.Key)
			}
			r.ids, r.bodies, r.incs = append(r.ids, e.Records[i].ID), append(r.bodies, b), append(r.incs, int64(e.Records[i].Incarnation))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	// In one order on every replica: two batches trimming the same
	// conversations lock their old records in the same order, and never
	// deadlock.
	slices.SortFunc(keys, func(a, b history.Key) int {
		return cmp.Or(strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Conversation, b.Conversation))
	})
	var tenants, convs, ids []string
	var bodies [][]byte
	var incs []int64
	for _, k := range keys {
		r := byKey[k]
		for range r.ids {
			tenants, convs = append(tenants, k.Tenant), append(convs, k.Conversation)
		}
		ids, bodies, incs = append(ids, r.ids...), append(bodies, r.bodies...), append(incs, r.incs...)
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(batchInsertSQL, tenants, convs, ids, bodies, incs)
	for _, k := range keys {
		r := byKey[k]
		if history.TrimDueIDs(r.ids) {
			b.Queue(trimExchangesSQL, k.Tenant, k.Conversation)
		}
	}
	b.Queue("COMMIT")
	err := s.again(ctx, func() error { return s.runTx(ctx, b) })
	return wrap(fmt.Sprintf("append exchange batch (%d conversations)", len(keys)), err)
}

var _ history.ExchangeBatcher = (*Store)(nil)

// exchangesSQL lists a conversation's records older than $3 (all, if
// ”), newest first, up to $4, among its newest
// history.MaxExchangeRecords only (between trims it holds a few more).
var exchangesSQL = fmt.Sprintf(`SELECT body FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 AND ($3 = '' OR id < $3)
 AND id >= coalesce((SELECT id FROM recall_exchanges WHERE tenant = $1 AND conversation = $2 ORDER BY id DESC OFFSET %d LIMIT 1), '')
 ORDER BY id DESC LIMIT $4`, history.MaxExchangeRecords-1)

// Exchanges reads up to limit of k's records older than before (all, if
// before is ""), newest first.
func (s *Store) Exchanges(ctx context.Context, k history.Key, before string, limit int) (out []history.ExchangeRecord, err error) {
	err = s.again(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, exchangesSQL, k.Tenant, k.Conversation, before, limit)
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
