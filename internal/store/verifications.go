package store

import (
	"context"
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

// CreateEmailVerification inserts t and sets its ID.
func (s *VerificationStore) CreateEmailVerification(ctx context.Context, t *auth.EmailVerification) error {
	return s.createToken(ctx, "email_verifications", t)
}

// FindEmailVerification returns the verification with token hash tokenHash,
// locked FOR UPDATE on PostgreSQL inside a transaction, or an errs.NotFound
// error.
func (s *VerificationStore) FindEmailVerification(ctx context.Context, tokenHash string) (*auth.EmailVerification, error) {
	return s.findToken(ctx, "email_verifications", tokenHash, errVerificationNotFound)
}

// UseEmailVerifications marks every unused verification of user userID used at now.
func (s *VerificationStore) UseEmailVerifications(ctx context.Context, userID int64, now time.Time) error {
	return s.useTokens(ctx, "email_verifications", userID, now)
}
