package store

import (
	"context"
	"database/sql"
	"errors"

	"tuxlab/internal/auth"
	"tuxlab/internal/profile"
)

// ProfileStore keeps the profile columns of users.
type ProfileStore struct{ *DB }

// Profiles returns the profiles' store over the shared pool.
func (s *DB) Profiles() *ProfileStore { return &ProfileStore{s} }

var _ profile.Store = (*ProfileStore)(nil)

const profileColumns = `id, username, email, role, full_name, bio, avatar, created_at, updated_at`

func scanProfile(row scanner) (*profile.Profile, error) {
	var (
		p      profile.Profile
		avatar sql.NullString
	)
	err := row.Scan(&p.ID, &p.Username, &p.Email, &p.Role, &p.FullName, &p.Bio, &avatar, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrUserNotFound
	}
	if err != nil {
		return nil, err
	}
	p.Avatar = avatar.String
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return &p, nil
}

// FindProfile returns user id's profile, or auth.ErrUserNotFound.
func (s *ProfileStore) FindProfile(ctx context.Context, id int64) (*profile.Profile, error) {
	return scanProfile(s.q(ctx).QueryRowContext(ctx, `SELECT `+profileColumns+` FROM users WHERE id = $1`, id))
}

// UpdateProfile applies change to user id's profile with the row locked, in
// the transaction ctx carries or its own. An e-mail another user has is
// auth.ErrEmailTaken, checked in the transaction; the unique index catches a
// concurrent twin.
func (s *ProfileStore) UpdateProfile(ctx context.Context, id int64, change func(p *profile.Profile) error) (*profile.Profile, error) {
	var out *profile.Profile
	err := s.inUserTx(ctx, id, func(tx *sql.Tx) error {
		p, err := scanProfile(tx.QueryRowContext(ctx, `SELECT `+profileColumns+` FROM users WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		email := p.Email
		if err := change(p); err != nil {
			return err
		}
		if p.Email != email {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE email = $1 AND id <> $2`, p.Email, id).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return auth.ErrEmailTaken
			}
		}
		var avatar any
		if p.Avatar != "" {
			avatar = p.Avatar
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET email = $1, full_name = $2, bio = $3, avatar = $4, updated_at = $5 WHERE id = $6`,
			p.Email, p.FullName, p.Bio, avatar, p.UpdatedAt.UTC(), id)
		if err = translate(err); errors.Is(err, ErrUnique) {
			return auth.ErrEmailTaken
		}
		out = p
		return err
	})
	return out, err
}
