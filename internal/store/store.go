// Package store keeps tuxlab's data in SQLite (the embedded default) or
// PostgreSQL through one database/sql pool. SQL text is shared by both engines
// ($N placeholders work in both); the few differences sit in a Dialect value.
// Driver errors are translated here, by code, into errs kinds.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Engine names a database engine.
type Engine string

// The engines tuxlab runs on.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
)

// Dialect holds what differs between the engines in the SQL the store writes.
type Dialect struct {
	Engine Engine
	// ForUpdate locks selected rows until the transaction ends. SQLite needs no
	// row locks: its write transactions start IMMEDIATE and so run one at a time.
	ForUpdate string
}

// DB is the store.
type DB struct {
	db      *sql.DB
	dialect Dialect
	stmts   sync.Map // query text → *sql.Stmt, see stmt
	users   *userCache
	// stopListening ends ListenUsers and waits for it; nil when it never ran.
	stopListening func()
	// Now stamps rows and ages cached users; tests may pin it.
	Now func() time.Time
}

// Open connects to PostgreSQL when dsn is a postgres:// URL, otherwise opens
// (creating it if needed) the SQLite file at sqlitePath.
func Open(ctx context.Context, dsn, sqlitePath string) (*DB, error) {
	var (
		db *sql.DB
		d  Dialect
	)
	if dsn != "" && (strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")) {
		var err error
		if db, err = sql.Open("pgx", dsn); err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		db.SetMaxOpenConns(20)
		db.SetMaxIdleConns(20)
		db.SetConnMaxIdleTime(5 * time.Minute)
		d = Dialect{Engine: Postgres, ForUpdate: " FOR UPDATE"}
	} else {
		if err := os.MkdirAll(filepath.Dir(sqlitePath), 0o700); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		q := url.Values{}
		for _, p := range []string{"foreign_keys(1)", "journal_mode(WAL)", "busy_timeout(10000)", "synchronous(NORMAL)"} {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate")
		q.Set("_time_format", "sqlite")
		var err error
		if db, err = sql.Open("sqlite", "file:"+sqlitePath+"?"+q.Encode()); err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
		d = Dialect{Engine: SQLite}
	}
	// A PostgreSQL store caches users only while ListenUsers hears about
	// changes made by other processes.
	s := &DB{db: db, dialect: d, users: newUserCache(d.Engine == SQLite), Now: time.Now}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", d.Engine, err)
	}
	return s, nil
}

// Close stops listening for user changes and closes the prepared
// statements and the pool.
func (s *DB) Close() error {
	if s.stopListening != nil {
		s.stopListening()
	}
	s.stmts.Range(func(_, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	return s.db.Close()
}

// stmt returns query prepared once for the pool, or nil when it does not
// prepare (a table not migrated yet: the caller's plain query then reports
// why). It is for reads made on every request: SQLite otherwise parses and
// plans the text on each call, a third of a user read's CPU. database/sql
// prepares it on each pool connection the first time that connection runs it.
func (s *DB) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := s.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt)
	}
	return st
}

// queryRowPrepared is QueryRowContext on the pool through a prepared
// statement, or in the transaction ctx carries from InTx.
func (s *DB) queryRowPrepared(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := ctx.Value(txKey{}).(*txState); ok {
		return st.tx.QueryRowContext(ctx, query, args...)
	}
	if st := s.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.QueryRowContext(ctx, query, args...)
}

// queryPrepared is QueryContext on the pool through a prepared statement, or
// in the transaction ctx carries from InTx.
func (s *DB) queryPrepared(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := ctx.Value(txKey{}).(*txState); ok {
		return st.tx.QueryContext(ctx, query, args...)
	}
	if st := s.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, query, args...)
}

// Engine tells which engine the store runs on.
func (s *DB) Engine() Engine { return s.dialect.Engine }

// Ping checks that the database answers; /readyz uses it.
func (s *DB) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// querier is what reads need of a pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// q is the transaction ctx carries from InTx, or the pool.
func (s *DB) q(ctx context.Context) querier {
	if st, ok := ctx.Value(txKey{}).(*txState); ok {
		return st.tx
	}
	return s.db
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// SQL returns the pool, for tests and tools that need raw access.
func (s *DB) SQL() *sql.DB { return s.db }

// now returns the store clock in UTC, to the microsecond both engines keep.
func (s *DB) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// txKey carries the transaction InTx opened, as a *txState.
type txKey struct{}

// txState is a transaction InTx opened and what waits for its commit.
type txState struct {
	tx    *sql.Tx
	mu    sync.Mutex
	after []func()
}

// InTx runs fn in one transaction that every store write made with fn's
// context joins, whatever its domain: an attempt and its activity record
// commit together or not at all. A nested InTx joins the outer transaction.
func (s *DB) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*txState); ok {
		return fn(ctx)
	}
	st := &txState{}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		st.tx = tx
		return fn(context.WithValue(ctx, txKey{}, st))
	})
	if err != nil {
		return err
	}
	st.mu.Lock()
	after := st.after
	st.mu.Unlock()
	for _, f := range after {
		f()
	}
	return nil
}

// AfterCommit runs fn once the transaction ctx carries from InTx has
// committed, and never if it rolls back; without one, at once (a store write
// made without InTx has committed when it returns). Side effects outside the
// database that follow a write go through it, so they never run for a write
// that did not happen, nor before a concurrent reader can see it.
func (s *DB) AfterCommit(ctx context.Context, fn func()) {
	st, ok := ctx.Value(txKey{}).(*txState)
	if !ok {
		fn()
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.after = append(st.after, fn)
}

// inTx runs fn in a transaction: begin, defer rollback, fn, commit; or in the
// transaction ctx carries from InTx. Side effects outside the database belong
// after inTx returns (or in AfterCommit), never inside fn.
func (s *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if st, ok := ctx.Value(txKey{}).(*txState); ok {
		return fn(st.tx)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", translate(err))
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", translate(err))
	}
	return nil
}

// Errors of the engines, by kind. translate maps driver errors onto them.
var (
	// ErrUnique is a unique constraint violation.
	ErrUnique = errors.New("unique constraint violated")
	// ErrForeignKey is a foreign key violation: the row refers to a missing one, or is still referred to.
	ErrForeignKey = errors.New("foreign key constraint violated")
)

// translate wraps driver errors it recognises by code with ErrUnique or ErrForeignKey.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "23505":
			return fmt.Errorf("%w (%s): %w", ErrUnique, pg.ConstraintName, err)
		case "23503":
			return fmt.Errorf("%w (%s): %w", ErrForeignKey, pg.ConstraintName, err)
		}
		return err
	}
	var lite *sqlite.Error
	if errors.As(err, &lite) {
		switch lite.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w: %w", ErrUnique, err)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%w: %w", ErrForeignKey, err)
		}
	}
	return err
}
