package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the advisory lock key the migrator holds: "recall"
// in ASCII.
const migrationLock = 0x726563616c6c

// Migration is one embedded schema version.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations, oldest first. A file is
// named NNNN_what.sql; its number is its version.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		n, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("pgstore: migration %s: no version number", base)
		}
		b, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: n, Name: base, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrate brings the schema to the newest embedded version, in one
// transaction under a transaction-scoped advisory lock: replicas starting
// together wait for the first, then find nothing to do, and a replica
// killed mid-way leaves no half-applied version (PostgreSQL's DDL is
// transactional). It returns the version the schema is at.
//
// Why not goose: it works through database/sql (pgx's stdlib adapter, a
// second pool) and its own session locker; the whole job here is "lock,
// read the version, run what is newer, record it", which one transaction
// does atomically in a few lines.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	all, err := Migrations()
	if err != nil {
		return 0, err
	}
	version := 0
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS recall_schema (
			version    int         PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM recall_schema").Scan(&version); err != nil {
			return err
		}
		for _, m := range all {
			if m.Version <= version {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("pgstore: migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO recall_schema (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return err
			}
			version = m.Version
		}
		return nil
	})
	return version, err
}
