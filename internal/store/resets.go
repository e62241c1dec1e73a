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
