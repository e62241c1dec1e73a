package store

import (
	"context"
	"database/sql"
	"errors"
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

// CreatePasswordReset inserts r and sets its ID.
func (s *ResetStore) CreatePasswordReset(ctx context.Context, r *auth.PasswordReset) error {
	err := s.q(ctx).QueryRowContext(ctx, `INSERT INTO password_resets (user_id, token_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4) RETURNING id`, r.UserID, r.TokenHash, r.ExpiresAt.UTC(), r.CreatedAt.UTC()).Scan(&r.ID)
	return translate(err)
}

// FindPasswordReset returns the reset with token hash tokenHash, locked
// FOR UPDATE on PostgreSQL inside a transaction (SQLite's write
// transactions run one at a time), or an errs.NotFound error.
func (s *ResetStore) FindPasswordReset(ctx context.Context, tokenHash string) (*auth.PasswordReset, error) {
	lock := ""
	if _, ok := ctx.Value(txKey{}).(*txState); ok {
		lock = s.dialect.ForUpdate
	}
	var (
		r    auth.PasswordReset
		used sql.NullTime
	)
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id, user_id, token_hash, expires_at, used_at, created_at
		FROM password_resets WHERE token_hash = $1`+lock, tokenHash).
		Scan(&r.ID, &r.UserID, &r.TokenHash, &r.ExpiresAt, &used, &r.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errResetNotFound
	}
	if err != nil {
		return nil, err
	}
	r.ExpiresAt, r.CreatedAt, r.UsedAt = r.ExpiresAt.UTC(), r.CreatedAt.UTC(), nullTime(used)
	return &r, nil
}

// UsePasswordResets marks every unused reset of user userID used at now.
func (s *ResetStore) UsePasswordResets(ctx context.Context, userID int64, now time.Time) error {
	_, err := s.q(ctx).ExecContext(ctx, `UPDATE password_resets SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`,
		now.UTC(), userID)
	return translate(err)
}
