package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"tuxlab/internal/auth"
)

// MFAStore keeps two-factor sign-in: sealed TOTP secrets, the last time
// step used, hashed recovery codes, and the install's rule in settings.
// users.mfa_enabled_at, which the per-request check reads, changes only
// here. Its writes join the transaction ctx carries from InTx.
type MFAStore struct{ *DB }

// MFA returns the two-factor store over the shared pool.
func (s *DB) MFA() *MFAStore { return &MFAStore{s} }

var _ auth.MFAStore = (*MFAStore)(nil)

// mfaRequiredKey is the settings row of the install's rule (migration 0019).
const mfaRequiredKey = "mfa_required_staff"

// FindMFA returns user id's two-factor state: a zero one when none was set up.
func (s *MFAStore) FindMFA(ctx context.Context, userID int64) (*auth.MFA, error) {
	m := &auth.MFA{UserID: userID}
	err := s.q(ctx).QueryRowContext(ctx, `SELECT secret, pending_secret, last_step FROM user_mfa WHERE user_id = $1`, userID).
		Scan(&m.Secret, &m.PendingSecret, &m.LastStep)
	if errors.Is(err, sql.ErrNoRows) {
		return m, nil
	}
	return m, err
}

// SetPendingMFA stores sealed as user id's pending secret.
func (s *MFAStore) SetPendingMFA(ctx context.Context, userID int64, sealed []byte, at time.Time) error {
	_, err := s.q(ctx).ExecContext(ctx, `INSERT INTO user_mfa (user_id, pending_secret, pending_at) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET pending_secret = excluded.pending_secret, pending_at = excluded.pending_at`,
		userID, sealed, at.UTC())
	return translate(err)
}

// EnableMFA turns two-factor sign-in on (see auth.MFAStore).
func (s *MFAStore) EnableMFA(ctx context.Context, userID int64, pending []byte, step int64, at time.Time, codeHashes []string) error {
	return s.inUserTx(ctx, userID, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE user_mfa SET secret = pending_secret, pending_secret = NULL, pending_at = NULL,
			last_step = $1 WHERE user_id = $2 AND pending_secret = $3`, step, userID, pending)
		if err != nil {
			return err
		}
		if err := requireRow(res, auth.ErrMFANotSetUp); err != nil {
			return err
		}
		if err := insertRecoveryCodes(ctx, tx, userID, at, codeHashes); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `UPDATE users SET mfa_enabled_at = $1 WHERE id = $2 AND mfa_enabled_at IS NULL`, at.UTC(), userID)
		if err != nil {
			return err
		}
		return requireRow(res, auth.ErrMFAAlreadyOn)
	})
}

// insertRecoveryCodes replaces user id's recovery codes with hashes.
func insertRecoveryCodes(ctx context.Context, tx *sql.Tx, userID int64, at time.Time, hashes []string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM mfa_recovery_codes WHERE user_id = $1`, userID); err != nil {
		return err
	}
	for _, h := range hashes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO mfa_recovery_codes (user_id, code_hash, created_at) VALUES ($1, $2, $3)`,
			userID, h, at.UTC()); err != nil {
			return translate(err)
		}
	}
	return nil
}

// DisableMFA turns two-factor sign-in off (see auth.MFAStore).
func (s *MFAStore) DisableMFA(ctx context.Context, userID int64) error {
	return s.inUserTx(ctx, userID, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM mfa_recovery_codes WHERE user_id = $1`,
			`DELETE FROM user_mfa WHERE user_id = $1`,
			`UPDATE users SET mfa_enabled_at = NULL WHERE id = $1`,
		} {
			if _, err := tx.ExecContext(ctx, q, userID); err != nil {
				return err
			}
		}
		return nil
	})
}

// UseTOTPStep records step as user id's last used one if it is later than
// the last, in one statement, so two requests cannot both use it.
func (s *MFAStore) UseTOTPStep(ctx context.Context, userID int64, step int64) (bool, error) {
	res, err := s.q(ctx).ExecContext(ctx, `UPDATE user_mfa SET last_step = $1
		WHERE user_id = $2 AND secret IS NOT NULL AND last_step < $1`, step, userID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// UseRecoveryCode marks user id's unused recovery code with hash as used,
// in one statement, so two requests cannot both use it.
func (s *MFAStore) UseRecoveryCode(ctx context.Context, userID int64, hash string, at time.Time) (bool, error) {
	res, err := s.q(ctx).ExecContext(ctx, `UPDATE mfa_recovery_codes SET used_at = $1
		WHERE user_id = $2 AND code_hash = $3 AND used_at IS NULL`, at.UTC(), userID, hash)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// UnusedRecoveryCodes counts user id's recovery codes not used yet.
func (s *MFAStore) UnusedRecoveryCodes(ctx context.Context, userID int64) (int, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM mfa_recovery_codes WHERE user_id = $1 AND used_at IS NULL`, userID).Scan(&n)
	return n, err
}

// MFARequired reads the install's rule; false when the row is missing.
func (s *MFAStore) MFARequired(ctx context.Context) (bool, error) {
	var v string
	err := s.q(ctx).QueryRowContext(ctx, `SELECT value FROM settings WHERE key = $1`, mfaRequiredKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return v == "true", err
}

// SetMFARequired writes the install's rule.
func (s *MFAStore) SetMFARequired(ctx context.Context, required bool) error {
	v := "false"
	if required {
		v = "true"
	}
	_, err := s.q(ctx).ExecContext(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, mfaRequiredKey, v)
	return err
}
