package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// UserStore keeps users: their accounts, roles and the per-request cache of
// their rows. Its writes join the transaction ctx carries from InTx.
type UserStore struct{ *DB }

// Users returns the users' store over the shared pool.
func (s *DB) Users() *UserStore { return &UserStore{s} }

var _ auth.UserStore = (*UserStore)(nil)

const userColumns = `id, username, email, password_hash, role, is_active, password_changed_at, created_at, updated_at,
	tokens_revoked_at, mfa_enabled_at, email_verified_at`

type scanner interface{ Scan(dest ...any) error }

func scanUser(row scanner) (*auth.User, error) {
	var (
		u       auth.User
		revoked sql.NullTime
		mfaOn   sql.NullTime
		mailOK  sql.NullTime
	)
	err := row.Scan(&u.ID, &u.Username, &u.Email, &u.PasswordHash, &u.Role, &u.IsActive,
		&u.PasswordChangedAt, &u.CreatedAt, &u.UpdatedAt, &revoked, &mfaOn, &mailOK)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, auth.ErrUserNotFound
	}
	if err != nil {
		return nil, err
	}
	u.PasswordChangedAt, u.CreatedAt, u.UpdatedAt = u.PasswordChangedAt.UTC(), u.CreatedAt.UTC(), u.UpdatedAt.UTC()
	u.TokensRevokedAt = nullTime(revoked)
	u.MFAEnabledAt = nullTime(mfaOn)
	u.EmailVerifiedAt = nullTime(mailOK)
	return &u, nil
}

// CreateUser inserts u and sets its ID. A taken username or e-mail is reported
// as auth.ErrUsernameTaken or auth.ErrEmailTaken, checked in the same transaction
// as the insert; the unique indexes catch a concurrent twin.
func (s *UserStore) CreateUser(ctx context.Context, u *auth.User) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := userTaken(ctx, tx, u.Username, u.Email); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO users
			(username, email, password_hash, role, is_active, password_changed_at, created_at, updated_at, email_verified_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			u.Username, u.Email, u.PasswordHash, u.Role, u.IsActive,
			u.PasswordChangedAt.UTC(), u.CreatedAt.UTC(), u.UpdatedAt.UTC(), timeArg(u.EmailVerifiedAt)).Scan(&u.ID)
		return translate(err)
	})
	if errors.Is(err, ErrUnique) {
		// A concurrent insert won the race: tell which field clashed. The
		// pool reads it, committed: a PostgreSQL transaction the insert
		// failed in answers nothing more.
		if terr := userTaken(ctx, s.db, u.Username, u.Email); terr != nil {
			return terr
		}
		return auth.ErrUsernameTaken
	}
	return err
}

func userTaken(ctx context.Context, q querier, username, email string) error {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE lower(username) = lower($1)`, username).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return auth.ErrUsernameTaken
	}
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE email = $1`, email).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return auth.ErrEmailTaken
	}
	return nil
}

const userByID = `SELECT ` + userColumns + ` FROM users WHERE id = $1`

// FindUserByID returns the user with id, or auth.ErrUserNotFound.
func (s *UserStore) FindUserByID(ctx context.Context, id int64) (*auth.User, error) {
	return scanUser(s.queryRowPrepared(ctx, userByID, id))
}

// userForRequest reads a user without the password hash, which the
// per-request check never needs and the cache had better not keep.
var userForRequest = `SELECT ` + strings.Replace(userColumns, "password_hash", "'' AS password_hash", 1) +
	` FROM users WHERE id = $1`

// FindUserForRequest returns user id without its password hash, for the
// identity check every authenticated request makes, or auth.ErrUserNotFound.
// It reuses a row it read less than UserCacheTTL ago unless the row was
// dropped since: every change through a store drops it in that store's
// process once the change's transaction has ended, and on PostgreSQL in
// every process listening (ListenUsers) when it commits.
//
// Inside an InTx it reads the transaction's row and leaves the cache alone:
// the cache holds committed rows only.
func (s *UserStore) FindUserForRequest(ctx context.Context, id int64) (*auth.User, error) {
	if _, ok := ctx.Value(txKey{}).(*txState); ok {
		return scanUser(s.q(ctx).QueryRowContext(ctx, userForRequest, id))
	}
	now := s.Now()
	u, gen := s.users.get(id, now)
	if u != nil {
		return u, nil
	}
	u, err := scanUser(s.queryRowPrepared(ctx, userForRequest, id))
	if err != nil {
		return nil, err
	}
	s.users.put(u, gen, now)
	return u, nil
}

// FindUserByUsername returns the user with username in any case, or auth.ErrUserNotFound.
func (s *UserStore) FindUserByUsername(ctx context.Context, username string) (*auth.User, error) {
	return scanUser(s.q(ctx).QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE lower(username) = lower($1)`, username))
}

// FindUsers returns one page of users ordered by id, and how many match in all.
func (s *UserStore) FindUsers(ctx context.Context, f auth.UserFilter) ([]*auth.User, int, error) {
	where, args := "", []any{}
	if f.Role != "" {
		where, args = " WHERE role = $1", append(args, f.Role)
	}
	var total int
	if err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM users`+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	rows, err := s.q(ctx).QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM users%s ORDER BY id LIMIT $%d OFFSET $%d`,
		userColumns, where, n+1, n+2), append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	users := []*auth.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, 0, err
		}
		users = append(users, u)
	}
	return users, total, rows.Err()
}

// lockUserAndCountAdmins loads user id and counts active admins inside tx, locking
// the admin rows on PostgreSQL so two concurrent demotions cannot both pass.
func (s *DB) lockUserAndCountAdmins(ctx context.Context, tx *sql.Tx, id int64) (*auth.User, int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM users WHERE role = 'admin' AND is_active`+s.dialect.ForUpdate)
	if err != nil {
		return nil, 0, err
	}
	admins := 0
	for rows.Next() {
		admins++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	u, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE id = $1`+s.dialect.ForUpdate, id))
	return u, admins, err
}

// UpdateUser applies change to user id in one transaction and stores the result.
func (s *UserStore) UpdateUser(ctx context.Context, id int64, change auth.UserChange) (*auth.User, error) {
	var out *auth.User
	err := s.inUserTx(ctx, id, func(tx *sql.Tx) error {
		u, admins, err := s.lockUserAndCountAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := change(u, admins); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET username = $1, email = $2, password_hash = $3, role = $4,
			is_active = $5, password_changed_at = $6, updated_at = $7, tokens_revoked_at = $8, email_verified_at = $9
			WHERE id = $10`,
			u.Username, u.Email, u.PasswordHash, u.Role, u.IsActive, u.PasswordChangedAt.UTC(), u.UpdatedAt.UTC(),
			timeArg(u.TokensRevokedAt), timeArg(u.EmailVerifiedAt), u.ID)
		if err = translate(err); errors.Is(err, ErrUnique) {
			return errs.E(errs.Conflict, "Username or email already registered")
		}
		out = u
		return err
	})
	return out, err
}

// DeleteUser removes user id if check allows it.
func (s *UserStore) DeleteUser(ctx context.Context, id int64, check auth.UserChange) error {
	return s.inUserTx(ctx, id, func(tx *sql.Tx) error {
		u, admins, err := s.lockUserAndCountAdmins(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := check(u, admins); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
		return translate(err)
	})
}

// CountUsers counts users by role and by status.
func (s *UserStore) CountUsers(ctx context.Context) (auth.UserStats, error) {
	st := auth.UserStats{ByRole: map[auth.Role]int{}}
	for _, r := range auth.Roles {
		st.ByRole[r] = 0
	}
	rows, err := s.q(ctx).QueryContext(ctx, `SELECT role, is_active, count(*) FROM users GROUP BY role, is_active`)
	if err != nil {
		return st, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			role   auth.Role
			active bool
			n      int
		)
		if err := rows.Scan(&role, &active, &n); err != nil {
			return st, err
		}
		st.ByRole[role] += n
		st.Total += n
		if active {
			st.Active += n
		} else {
			st.Inactive += n
		}
	}
	return st, rows.Err()
}
