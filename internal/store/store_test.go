package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newUser(name string, role auth.Role) *auth.User {
	now := time.Date(2026, 11, 22, 10, 0, 0, 123456000, time.UTC)
	return &auth.User{Username: name, Email: name + "@tuxlab.org", PasswordHash: "$2a$12$x", Role: role, IsActive: true,
		PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		n, err := db.Migrate(context.Background(), quiet)
		if err != nil || n != 0 {
			t.Fatalf("second migrate applied %d, err %v", n, err)
		}
	})
}

func TestMigrateRefusesUnknownMigration(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		if _, err := db.SQL().Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_from_the_future.sql', $1)`, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(context.Background(), quiet); err == nil {
			t.Fatal("migrate accepted a database from a newer tuxlab")
		}
	})
}

func TestUserRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := newUser("Alice", auth.RoleInstructor)
		if err := db.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := db.Users().FindUserByUsername(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != u.ID || got.Username != "Alice" || got.Role != auth.RoleInstructor || !got.IsActive ||
			!got.PasswordChangedAt.Equal(u.PasswordChangedAt) || got.CreatedAt.Location() != time.UTC {
			t.Fatalf("round trip: %+v, want %+v", got, u)
		}
		if _, err := db.Users().FindUserByID(ctx, u.ID+100); !errs.Is(err, errs.NotFound) {
			t.Fatalf("missing user: %v", err)
		}
		if err := db.Users().CreateUser(ctx, newUser("ALICE", auth.RoleStudent)); !errors.Is(err, auth.ErrUsernameTaken) {
			t.Fatalf("duplicate username: %v", err)
		}
		dup := newUser("alice2", auth.RoleStudent)
		dup.Email = u.Email
		if err := db.Users().CreateUser(ctx, dup); !errors.Is(err, auth.ErrEmailTaken) {
			t.Fatalf("duplicate email: %v", err)
		}
		// A change that fails leaves the row as it was.
		boom := errs.E(errs.Conflict, "no")
		if _, err := db.Users().UpdateUser(ctx, u.ID, func(u *auth.User, _ int) error { u.Role = auth.RoleAdmin; return boom }); !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if got, _ := db.Users().FindUserByID(ctx, u.ID); got.Role != auth.RoleInstructor {
			t.Fatalf("aborted change was stored: %s", got.Role)
		}
		st, err := db.Users().CountUsers(ctx)
		if err != nil || st.Total != 1 || st.ByRole[auth.RoleInstructor] != 1 || st.ByRole[auth.RoleAdmin] != 0 {
			t.Fatalf("stats %+v, %v", st, err)
		}
		if err := db.Users().DeleteUser(ctx, u.ID, func(*auth.User, int) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := db.Users().DeleteUser(ctx, u.ID, func(*auth.User, int) error { return nil }); !errs.Is(err, errs.NotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

// TestReplicasMigrateOnce: replicas starting together on one fresh PostgreSQL
// database migrate it once; none of them fails on the others' tables.
func TestReplicasMigrateOnce(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		if eng != store.Postgres {
			continue // an embedded SQLite file has one server
		}
		dsn, _ := storetest.URL(t, eng)
		ctx := context.Background()
		var dbs []*store.DB
		for range 4 {
			db, err := store.Open(ctx, dsn, "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs = append(dbs, db)
		}
		applied := make([]int, len(dbs))
		errList := make([]error, len(dbs))
		done := make(chan struct{})
		for i, db := range dbs {
			go func() {
				defer func() { done <- struct{}{} }()
				applied[i], errList[i] = db.Migrate(ctx, quiet)
			}()
		}
		for range dbs {
			<-done
		}
		total := 0
		for i := range dbs {
			if errList[i] != nil {
				t.Fatalf("replica %d: %v", i, errList[i])
			}
			total += applied[i]
		}
		var recorded int
		if err := dbs[0].SQL().QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&recorded); err != nil || total != recorded || total == 0 {
			t.Fatalf("replicas applied %v, %d recorded (%v)", applied, recorded, err)
		}
	}
}

// TestActivityQuarters: each record counts in its quarter-hour, and the
// migration's formula for rows written before the rollup gives the same quarter.
func TestActivityQuarters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := newUser("quinn", auth.RoleStudent)
		if err := db.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 3, 4, 23, 59, 59, 500000000, time.UTC)
		for _, ts := range []time.Time{at, at.Add(-time.Minute), at.Add(time.Second)} {
			if err := db.Activity().Record(ctx, &activity.Event{UserID: u.ID, Kind: activity.ThemeCompleted, At: ts}); err != nil {
				t.Fatal(err)
			}
		}
		bs, err := db.Activity().EventBuckets(ctx, u.ID, time.Time{})
		if err != nil || len(bs) != 2 || bs[0].Events != 2 || !bs[0].Start.Equal(time.Date(2026, 3, 4, 23, 45, 0, 0, time.UTC)) || bs[1].Events != 1 {
			t.Fatalf("buckets %+v %v", bs, err)
		}
		formula := `CAST(strftime('%s', at) AS INTEGER) / 900`
		if db.Engine() == store.Postgres {
			formula = `CAST(floor(extract(epoch FROM at) / 900) AS BIGINT)`
		}
		var n int
		if err := db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM activity a JOIN activity_quarters q
			ON q.user_id = a.user_id AND q.quarter = `+formula+` WHERE a.user_id = $1`, u.ID).Scan(&n); err != nil || n != 3 {
			t.Fatalf("the migration's formula matches %d of 3 rows (%v)", n, err)
		}
	})
}

// TestAfterCommit: what waits for a commit runs once the change is visible
// to every other connection, never for a transaction that rolled back, and
// at once outside a transaction.
func TestAfterCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := newUser("alice", auth.RoleStudent)
		if err := db.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		deactivate := func(ctx context.Context) error {
			_, err := db.Users().UpdateUser(ctx, u.ID, func(u *auth.User, _ int) error { u.IsActive = false; return nil })
			return err
		}
		ran, sawActive := 0, true
		after := func() {
			ran++
			got, err := db.Users().FindUserByID(ctx, u.ID) // the pool, not the transaction
			if err != nil {
				t.Error(err)
				return
			}
			sawActive = got.IsActive
		}
		boom := errors.New("boom")
		err := db.InTx(ctx, func(ctx context.Context) error {
			if err := deactivate(ctx); err != nil {
				return err
			}
			db.AfterCommit(ctx, after)
			return boom
		})
		if !errors.Is(err, boom) || ran != 0 {
			t.Fatalf("rolled back: err %v, ran %d times", err, ran)
		}
		err = db.InTx(ctx, func(ctx context.Context) error {
			if err := deactivate(ctx); err != nil {
				return err
			}
			db.AfterCommit(ctx, after)
			if ran != 0 {
				t.Error("ran before the commit")
			}
			return nil
		})
		if err != nil || ran != 1 || sawActive {
			t.Fatalf("committed: err %v, ran %d times, saw active %t", err, ran, sawActive)
		}
		db.AfterCommit(ctx, after)
		if ran != 2 {
			t.Fatal("did not run at once outside a transaction")
		}
	})
}
