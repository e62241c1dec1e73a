package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strings"
)

//go:embed migrations
var migrations embed.FS

// migration is one numbered .sql file.
type migration struct {
	name string // e.g. 0001_users.sql
	sql  string
}

func (s *DB) migrations() ([]migration, error) {
	dir := path.Join("migrations", string(s.dialect.Engine))
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := migrations.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return ms, nil
}

// Migrate applies every migration not yet recorded, each in its own transaction,
// in file-name order. It refuses a database that has migrations this binary does
// not know: that database belongs to a newer tuxlab.
//
// On PostgreSQL the whole run holds an advisory lock, so replicas starting
// together migrate once: the others wait, then find nothing left to do.
func (s *DB) Migrate(ctx context.Context, log *slog.Logger) (applied int, err error) {
	if s.dialect.Engine == Postgres {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("migration lock: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
			return 0, fmt.Errorf("migration lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	}
	return s.migrate(ctx, log)
}

// migrationLock keys the advisory lock of Migrate ("tuxmig" in ASCII).
const migrationLock = 0x7475786d6967

func (s *DB) migrate(ctx context.Context, log *slog.Logger) (applied int, err error) {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY,
		applied_at TIMESTAMP NOT NULL)`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	ms, err := s.migrations()
	if err != nil {
		return 0, err
	}
	done, err := s.appliedMigrations(ctx)
	if err != nil {
		return 0, err
	}
	known := make(map[string]bool, len(ms))
	for _, m := range ms {
		known[m.name] = true
	}
	for name := range done {
		if !known[name] {
			return 0, fmt.Errorf("database has migration %s that this tuxlab does not know: run a newer tuxlab", name)
		}
	}
	for _, m := range ms {
		if done[m.name] {
			continue
		}
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return translate(err)
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`, m.name, s.now())
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("migration %s: %w", m.name, err)
		}
		log.Info("applied migration", "name", m.name, "engine", s.dialect.Engine)
		applied++
	}
	return applied, nil
}

func (s *DB) appliedMigrations(ctx context.Context) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	done := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		done[n] = true
	}
	return done, rows.Err()
}
