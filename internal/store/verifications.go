package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// VerificationStore keeps e-mail verification tokens (their hashes). Its
// writes join the transaction ctx carries from InTx.
type VerificationStore struct{ *DB }

// Verifications returns the e-mail verifications' store over the shared pool.
func (s *DB) Verifications() *VerificationStore { return &VerificationStore{s} }

var _ auth.VerificationStore = (*VerificationStore)(nil)

var errVerificationNotFound = errs.E(errs.NotFound, "E-mail verification not found")

// FindUserByEmail returns the user with e-mail email (stored lower-case),
// or auth.ErrUserNotFound.
func (s *VerificationStore) FindUserByEmail(ctx context.Context, email string) (*auth.User, error) {
	return s.Resets().FindUserByEmail(ctx, email)
}

// CreateEmailVerification inserts v and sets its ID.
func (s *VerificationStore) CreateEmailVerification(ctx context.Context, v *auth.EmailVerification) error {
	err := s.q(ctx).QueryRowContext(ctx, `INSERT INTO email_verifications (user_id, token_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4) RETURNING id`, v.UserID, v.TokenHash, v.ExpiresAt.UTC(), v.CreatedAt.UTC()).Scan(&v.ID)
	return translate(err)
}

// FindEmailVerification returns the verification with token hash tokenHash,
// locked FOR UPDATE on PostgreSQL inside a transaction, or an errs.NotFound
// error.
func (s *VerificationStore) FindEmailVerification(ctx context.Context, tokenHash string) (*auth.EmailVerification, error) {
	lock := ""
	if _, ok := ctx.Value(txKey{}).(*txState); ok {
		lock = s.dialect.ForUpdate
	}
	var (
		v    auth.EmailVerification
		used sql.NullTime
	)
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id, user_id, token_hash, expires_at, used_at, created_at
		FROM email_verifications WHERE token_hash = $1`+lock, tokenHash).
		Scan(&v.ID, &v.UserID, &v.TokenHash, &v.ExpiresAt, &used, &v.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errVerificationNotFound
	}
	if err != nil {
		return nil, err
	}
	v.ExpiresAt, v.CreatedAt, v.UsedAt = v.ExpiresAt.UTC(), v.CreatedAt.UTC(), nullTime(used)
	return &v, nil
}

// UseEmailVerifications marks every unused verification of user userID used at now.
func (s *VerificationStore) UseEmailVerifications(ctx context.Context, userID int64, now time.Time) error {
	_, err := s.q(ctx).ExecContext(ctx, `UPDATE email_verifications SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`,
		now.UTC(), userID)
	return translate(err)
}
