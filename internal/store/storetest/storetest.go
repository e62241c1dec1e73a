// Package storetest opens real databases for tests: a SQLite file under the
// test's temporary directory always, and a fresh PostgreSQL database per test
// when TUXLAB_TEST_POSTGRES_URL is set. An unreachable PostgreSQL fails the
// test; it never skips.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"tuxlab/internal/store"
)

// PostgresEnv names the variable holding an admin URL of a PostgreSQL server.
const PostgresEnv = "TUXLAB_TEST_POSTGRES_URL"

// Engines lists the engines this test run covers.
func Engines() []store.Engine {
	if os.Getenv(PostgresEnv) != "" {
		return []store.Engine{store.SQLite, store.Postgres}
	}
	return []store.Engine{store.SQLite}
}

// Each runs fn as a subtest per engine, each with its own migrated database.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	for _, e := range Engines() {
		t.Run(string(e), func(t *testing.T) { fn(t, Open(t, e)) })
	}
}

// Open returns a migrated, empty database on engine e, removed when t ends.
func Open(t testing.TB, e store.Engine) *store.DB {
	t.Helper()
	dsn, path := URL(t, e)
	ctx := context.Background()
	db, err := store.Open(ctx, dsn, path)
	if err != nil {
		t.Fatalf("open %s: %v", e, err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("migrate %s: %v", e, err)
	}
	return db
}

// URL returns a DATABASE_URL (empty for SQLite) and SQLite path for a fresh,
// unmigrated database on engine e, removed when t ends.
func URL(t testing.TB, e store.Engine) (dsn, sqlitePath string) {
	t.Helper()
	sqlitePath = filepath.Join(t.TempDir(), "tuxlab.db")
	if e == store.SQLite {
		return "", sqlitePath
	}
	admin := os.Getenv(PostgresEnv)
	if admin == "" {
		t.Fatalf("%s is not set", PostgresEnv)
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", PostgresEnv, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "tuxlab_test_" + hex.EncodeToString(b)
	adminDB, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		adminDB.Close()
		t.Fatalf("PostgreSQL from %s is unreachable or refuses CREATE DATABASE: %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE ends the server's own connections; an autovacuum worker that
		// just came in may refuse to end for a moment, so try a few times.
		var err error
		for try := 0; try < 10; try++ {
			if _, err = adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
		adminDB.Close()
	})
	u.Path = "/" + name
	return u.String(), sqlitePath
}

// Must fails t on err; it keeps fixtures short.
func Must[T any](t testing.TB, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("fixture: %w", err))
	}
	return v
}
