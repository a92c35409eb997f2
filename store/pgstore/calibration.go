package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
)

var _ history.CalibrationStore = (*Store)(nil)

// PutCalibrations replaces tenant's calibrations with cals, in one
// transaction.
func (s *Store) PutCalibrations(ctx context.Context, tenant string, cals []history.Calibration) error {
	err := s.again(ctx, func() error {
		return wrap("put calibrations "+tenant, pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`DELETE FROM recall_calibrations WHERE tenant = $1`, tenant)
			for _, c := range cals {
				b.Queue(`INSERT INTO recall_calibrations (tenant, model, ratio, samples, window_tokens, updated_at) VALUES ($1, $2, $3, $4, $5, $6)`,
					tenant, c.Model, c.Ratio, int64(c.Samples), int64(c.Window), c.UpdatedAt)
			}
			return tx.SendBatch(ctx, b).Close()
		}))
	})
	return err
}

// Calibrations reads every tenant's calibrations.
func (s *Store) Calibrations(ctx context.Context) (map[string][]history.Calibration, error) {
	out := map[string][]history.Calibration{}
	err := s.again(ctx, func() error {
		clear(out)
		rows, err := s.pool.Query(ctx, `SELECT tenant, model, ratio, samples, window_tokens, updated_at FROM recall_calibrations ORDER BY tenant, model`)
		if err != nil {
			return wrap("read calibrations", err)
		}
		defer rows.Close()
		for rows.Next() {
			var tenant string
			var c history.Calibration
			var samples, window int64
			if err := rows.Scan(&tenant, &c.Model, &c.Ratio, &samples, &window, &c.UpdatedAt); err != nil {
				return wrap("read calibrations", err)
			}
			c.Samples, c.Window = int(samples), int(window)
			out[tenant] = append(out[tenant], c)
		}
		return wrap("read calibrations", rows.Err())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
