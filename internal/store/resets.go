package store

import (
	"context"
	"time"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// ResetStore keeps password reset tokens (their hashes). Its writes join the
// transaction ctx carries from InTx.
type ResetStore struct{ *DB }

// Resets returns the password resets' store over the shared pool.
func (s *DB) Resets() *ResetStore { return &ResetStore{s} }

var _ auth.ResetStore = (*ResetStore)(nil)

var errResetNotFound = errs.E(errs.NotFound, "Password reset not found")

// FindUserByEmail returns the user with e-mail email (stored lower-case),
// or auth.ErrUserNotFound.
func (s *ResetStore) FindUserByEmail(ctx context.Context, email string) (*auth.User, error) {
	return scanUser(s.q(ctx).QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email))
}

// CreatePasswordReset inserts t and sets its ID.
func (s *ResetStore) CreatePasswordReset(ctx context.Context, t *auth.PasswordReset) error {
	return s.createToken(ctx, "password_resets", t)
}

// CountPasswordResets locks user userID's row (FOR UPDATE on PostgreSQL;
// SQLite's write transactions run one at a time) and counts the resets
// made for the user at or after since.
func (s *ResetStore) CountPasswordResets(ctx context.Context, userID int64, since time.Time) (int, error) {
	var uid int64
	if err := s.q(ctx).QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+s.dialect.ForUpdate, userID).Scan(&uid); err != nil {
		return 0, translate(err)
	}
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM password_resets WHERE user_id = $1 AND created_at >= $2`,
		userID, since.UTC()).Scan(&n)
	return n, err
}

// FindPasswordReset returns the reset with token hash tokenHash, locked
// FOR UPDATE on PostgreSQL inside a transaction (SQLite's write
// transactions run one at a time), or an errs.NotFound error.
func (s *ResetStore) FindPasswordReset(ctx context.Context, tokenHash string) (*auth.PasswordReset, error) {
	return s.findToken(ctx, "password_resets", tokenHash, errResetNotFound)
}

// UsePasswordResets marks every unused reset of user userID used at now.
func (s *ResetStore) UsePasswordResets(ctx context.Context, userID int64, now time.Time) error {
	return s.useTokens(ctx, "password_resets", userID, now)
}
