package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/auth"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// pin stops db's clock, so a cached user never ages: only a drop refreshes it.
func pin(db *store.DB) {
	now := time.Now()
	db.Now = func() time.Time { return now }
}

// TestUserDroppedAfterTheOuterCommit changes a user inside a transaction
// that another write joins, while a concurrent request reads (and caches)
// the row as it was: once the transaction has committed, the next read
// sees the change.
func TestUserDroppedAfterTheOuterCommit(t *testing.T) {
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) { testUserDroppedAfterTheOuterCommit(t, eng) })
	}
}

func testUserDroppedAfterTheOuterCommit(t *testing.T, eng store.Engine) {
	ctx := context.Background()
	db := openListening(t, eng)
	pin(db)
	u := newUser("tess", auth.RoleStudent)
	if err := db.Users().CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	err := db.InTx(ctx, func(ctx context.Context) error {
		if _, err := db.Users().UpdateUser(ctx, u.ID, func(u *auth.User, _ int) error { u.Role = auth.RoleAdmin; return nil }); err != nil {
			return err
		}
		// Another request, outside the transaction, still reads the
		// committed row, and caches it.
		during, err := db.Users().FindUserForRequest(context.Background(), u.ID)
		if err != nil || during.Role != auth.RoleStudent {
			t.Errorf("read during the transaction: %+v, %v", during, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	after, err := db.Users().FindUserForRequest(ctx, u.ID)
	if err != nil || after.Role != auth.RoleAdmin {
		t.Fatalf("after the commit: %+v, %v", after, err)
	}
	if after.PasswordHash != "" {
		t.Fatal("the per-request read carries the password hash")
	}
}

// openListening opens a migrated database on eng with its user cache on.
func openListening(t *testing.T, eng store.Engine) *store.DB {
	t.Helper()
	ctx := context.Background()
	dsn, path := storetest.URL(t, eng)
	db, err := store.Open(ctx, dsn, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	db.ListenUsers(ctx, dsn, quiet)
	return db
}

// TestUserCacheRecoversFromALostListener ends the connection a PostgreSQL
// store listens on, then changes a user through another store while that
// store's notification has nobody to reach: once the first store listens
// again, it no longer serves the row it cached before (its clock is pinned,
// so the row never ages out).
func TestUserCacheRecoversFromALostListener(t *testing.T) {
	for _, eng := range storetest.Engines() {
		if eng != store.Postgres {
			continue // SQLite has no listener
		}
		dsn, _ := storetest.URL(t, eng)
		ctx := context.Background()
		open := func() *store.DB {
			db, err := store.Open(ctx, dsn, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := db.Migrate(ctx, quiet); err != nil {
				t.Fatal(err)
			}
			return db
		}
		find := func(db *store.DB, id int64) *auth.User {
			t.Helper()
			u, err := db.Users().FindUserForRequest(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		a, b := open(), open()
		// The user exists before a listens: the announcement of its
		// creation must not reach a late and drop the row it caches.
		u := newUser("lena", auth.RoleStudent)
		if err := b.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		a.ListenUsers(ctx, dsn, quiet)
		pin(a)
		if got := find(a, u.ID); got.Role != auth.RoleStudent {
			t.Fatalf("role %s", got.Role)
		}

		// A change written with the announcing trigger off: a serves its cached row.
		updateUnannounced(t, b, u.ID, "lena.raw@tuxlab.org")
		if got := find(a, u.ID); got.Email != "lena@tuxlab.org" {
			t.Fatalf("a is not caching: e-mail %q", got.Email)
		}

		var ended bool
		if err := b.SQL().QueryRowContext(ctx, `SELECT bool_and(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'LISTEN tuxlab_users'`).Scan(&ended); err != nil || !ended {
			t.Fatalf("end the listener's connection: %v %v", ended, err)
		}
		if _, err := b.Users().UpdateUser(ctx, u.ID, func(u *auth.User, _ int) error { u.Role = auth.RoleAdmin; return nil }); err != nil {
			t.Fatal(err)
		}

		deadline := time.Now().Add(20 * time.Second)
		for {
			got := find(a, u.ID)
			if got.Role == auth.RoleAdmin && got.Email == "lena.raw@tuxlab.org" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("a still serves %+v after losing its listener", got)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// updateUnannounced sets user id's e-mail with the trigger that announces
// changes to users turned off, as if a write had not been announced.
func updateUnannounced(t *testing.T, db *store.DB, id int64, email string) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []string{`ALTER TABLE users DISABLE TRIGGER users_notify`,
		`UPDATE users SET email = $1 WHERE id = $2`, `ALTER TABLE users ENABLE TRIGGER users_notify`} {
		var args []any
		if strings.HasPrefix(q, "UPDATE") {
			args = []any{email, id}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestRawUserWritesAreAnnounced: on PostgreSQL a change written straight
// into the users table, by no store method, still reaches the cache of every
// listening store (the trigger of migration 0015 announces it), whose clock
// is pinned so the row would never age out.
func TestRawUserWritesAreAnnounced(t *testing.T) {
	for _, eng := range storetest.Engines() {
		if eng != store.Postgres {
			continue // SQLite has no listener
		}
		ctx := context.Background()
		a := openListening(t, eng)
		pin(a)
		u := newUser("mira", auth.RoleStudent)
		if err := a.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`UPDATE users SET email = 'mira.raw@tuxlab.org' WHERE id = $1`, `DELETE FROM users WHERE id = $1`} {
			if _, err := a.Users().FindUserForRequest(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := a.SQL().ExecContext(ctx, q, u.ID); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				got, err := a.Users().FindUserForRequest(ctx, u.ID)
				deleted := strings.HasPrefix(q, "DELETE")
				if deleted && err != nil || !deleted && err == nil && got.Email == "mira.raw@tuxlab.org" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s the cache still serves %+v (%v)", q, got, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
