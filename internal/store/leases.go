package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// LeaseStore holds the leases of work that runs once per install
// (table leases): whoever holds a lease's row, unexpired, does the work.
type LeaseStore struct{ *DB }

// Leases returns the lease store over the shared pool.
func (s *DB) Leases() *LeaseStore { return &LeaseStore{s} }

// AcquireLease takes or renews lease name for holder until now+ttl, and
// reports whether holder has it: it does when nobody held it, when holder
// held it already, or when the previous holder's lease had expired. One
// statement, so of two processes racing for a free lease exactly one wins
// (the row's primary key and the conditional upsert decide).
func (s *LeaseStore) AcquireLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	res, err := s.q(ctx).ExecContext(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= $4`, name, holder, now.Add(ttl), now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseLease gives lease name back if holder has it, so the next process
// takes it at once instead of waiting for it to expire.
func (s *LeaseStore) ReleaseLease(ctx context.Context, name, holder string) error {
	_, err := s.q(ctx).ExecContext(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder)
	return err
}

// LeaseHolder returns who holds lease name and until when ("" when nobody
// has it), expired or not.
func (s *LeaseStore) LeaseHolder(ctx context.Context, name string) (string, time.Time, error) {
	var holder string
	var until time.Time
	err := s.q(ctx).QueryRowContext(ctx, `SELECT holder, expires_at FROM leases WHERE name = $1`, name).Scan(&holder, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	return holder, until, err
}
