package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"tuxlab/internal/auth"
)

// The one-time tokens of mailed links (auth.OneTimeToken), one table per
// purpose: password_resets and email_verifications. table is always one of
// those constants, never input.

// createToken inserts t into table and sets its ID.
func (s *DB) createToken(ctx context.Context, table string, t *auth.OneTimeToken) error {
	err := s.q(ctx).QueryRowContext(ctx, `INSERT INTO `+table+` (user_id, token_hash, expires_at, created_at)
		VALUES ($1, $2, $3, $4) RETURNING id`, t.UserID, t.TokenHash, t.ExpiresAt.UTC(), t.CreatedAt.UTC()).Scan(&t.ID)
	return translate(err)
}

// findToken returns the token of table with hash tokenHash, locked FOR
// UPDATE on PostgreSQL inside a transaction (SQLite's write transactions run
// one at a time), or notFound.
func (s *DB) findToken(ctx context.Context, table, tokenHash string, notFound error) (*auth.OneTimeToken, error) {
	lock := ""
	if _, ok := ctx.Value(txKey{}).(*txState); ok {
		lock = s.dialect.ForUpdate
	}
	var (
		t    auth.OneTimeToken
		used sql.NullTime
	)
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id, user_id, token_hash, expires_at, used_at, created_at
		FROM `+table+` WHERE token_hash = $1`+lock, tokenHash).
		Scan(&t.ID, &t.UserID, &t.TokenHash, &t.ExpiresAt, &used, &t.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	t.ExpiresAt, t.CreatedAt, t.UsedAt = t.ExpiresAt.UTC(), t.CreatedAt.UTC(), nullTime(used)
	return &t, nil
}

// useTokens marks every unused token of table of user userID used at now.
func (s *DB) useTokens(ctx context.Context, table string, userID int64, now time.Time) error {
	_, err := s.q(ctx).ExecContext(ctx, `UPDATE `+table+` SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`,
		now.UTC(), userID)
	return translate(err)
}
