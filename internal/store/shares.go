package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/share"
)

// ShareStore keeps the shares of sandbox terminals.
type ShareStore struct{ *DB }

// Shares returns the share store over the shared pool.
func (s *DB) Shares() *ShareStore { return &ShareStore{s} }

var _ share.Store = (*ShareStore)(nil)

const shareColumns = `sh.id, sh.container_id, sh.user_id, u.username, sh.token_hash, sh.mode, sh.typing, sh.expires_at, sh.created_at
	FROM terminal_shares sh JOIN users u ON u.id = sh.user_id`

func scanShare(row scanner) (*share.Share, error) {
	var sh share.Share
	var mode string
	err := row.Scan(&sh.ID, &sh.ContainerID, &sh.UserID, &sh.OwnerName, &sh.TokenHash, &mode, &sh.Typing, &sh.ExpiresAt, &sh.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, share.ErrNotFound
	}
	sh.Mode, sh.ExpiresAt, sh.CreatedAt = share.Mode(mode), sh.ExpiresAt.UTC(), sh.CreatedAt.UTC()
	return &sh, err
}

// CreateShare inserts sh unless its sandbox has max live shares. The
// sandbox's row is locked (PostgreSQL; SQLite's write transactions run one
// at a time), so concurrent creations are counted one after the other;
// expired shares are deleted on the way.
func (s *ShareStore) CreateShare(ctx context.Context, sh *share.Share, max int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var id int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM containers WHERE id = $1`+s.dialect.ForUpdate, sh.ContainerID).Scan(&id); err != nil {
			return fmt.Errorf("lock the sandbox: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM terminal_shares WHERE container_id = $1 AND expires_at <= $2`, sh.ContainerID, sh.CreatedAt); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM terminal_shares WHERE container_id = $1`, sh.ContainerID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return share.ErrTooMany
		}
		return translate(tx.QueryRowContext(ctx, `INSERT INTO terminal_shares (container_id, user_id, token_hash, mode, typing, expires_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, sh.ContainerID, sh.UserID, sh.TokenHash, string(sh.Mode), sh.Typing, sh.ExpiresAt, sh.CreatedAt).Scan(&sh.ID))
	})
}

// FindShares lists the shares of sandbox containerID live at now, oldest first.
func (s *ShareStore) FindShares(ctx context.Context, containerID int64, now time.Time) ([]*share.Share, error) {
	return queryAll(ctx, s.q(ctx), scanShare, `SELECT `+shareColumns+` WHERE sh.container_id = $1 AND sh.expires_at > $2 ORDER BY sh.id`,
		containerID, now.UTC())
}

// FindShareByID returns share id of sandbox containerID, or share.ErrNotFound.
func (s *ShareStore) FindShareByID(ctx context.Context, containerID, id int64) (*share.Share, error) {
	return scanShare(s.q(ctx).QueryRowContext(ctx, `SELECT `+shareColumns+` WHERE sh.id = $1 AND sh.container_id = $2`, id, containerID))
}

// FindShareByToken returns the share with token hash hash, or share.ErrNotFound.
func (s *ShareStore) FindShareByToken(ctx context.Context, hash string) (*share.Share, error) {
	return scanShare(s.q(ctx).QueryRowContext(ctx, `SELECT `+shareColumns+` WHERE sh.token_hash = $1`, hash))
}

// SetShareTyping sets whether share id's guests may type.
func (s *ShareStore) SetShareTyping(ctx context.Context, containerID, id int64, typing bool) error {
	return s.one(ctx, `UPDATE terminal_shares SET typing = $1 WHERE id = $2 AND container_id = $3`, typing, id, containerID)
}

// DeleteShare deletes share id of sandbox containerID.
func (s *ShareStore) DeleteShare(ctx context.Context, containerID, id int64) error {
	return s.one(ctx, `DELETE FROM terminal_shares WHERE id = $1 AND container_id = $2`, id, containerID)
}

// InExam reports whether sandbox containerID is the sandbox of an exam
// attempt in progress.
func (s *ShareStore) InExam(ctx context.Context, containerID int64) (bool, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM exam_attempts WHERE container_id = $1 AND status = 'in_progress'`, containerID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("find an exam in sandbox %d: %w", containerID, err)
	}
	return n > 0, nil
}

// one runs a statement that must change exactly one share.
func (s *ShareStore) one(ctx context.Context, query string, args ...any) error {
	res, err := s.q(ctx).ExecContext(ctx, query, args...)
	if err != nil {
		return translate(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return share.ErrNotFound
	}
	return nil
}
