package auth

import (
	"context"
	"strconv"
	"strings"

	"tuxlab/internal/errs"
)

// The fields of a password change, as its callers name them.
var (
	locCurrentPassword = []any{"current_password"}
	locNewPassword     = []any{"new_password"}
)

// ErrWrongPassword is a password change whose current password is wrong. It is
// a validation error on the field (422), not 401 or 403: the caller's token is
// fine, and a form shows the message next to the field.
var ErrWrongPassword = errs.Field(locCurrentPassword, "Current password is incorrect", "value_error")

// PasswordChange is a user's password change, checked and hashed, ready to be
// stored by ApplyPasswordChange. The bcrypt work is done by then, so the
// transaction that stores the change stays short.
type PasswordChange struct {
	userID int64
	hash   string
}

// PreparePasswordChange checks a user's own password change: current must be
// the user's password, next must pass the registration rules and differ from
// current. Both bcrypt computations run on the bounded hasher (503 when its
// queue is full), outside any transaction, in its ordinary lane: a signed-in
// user is known, but one who sends wrong current passwords at once must not
// go ahead of logins from new addresses. Attempts are rate limited per
// account as logins are per account and address (429 with Retry-After,
// TUXLAB_AUTH_RATE_USER a minute), and count towards the account's ceiling
// that logins share, so a stolen token cannot be used to guess the password
// faster than a login could.
// Problems are 422 at ["current_password"] or ["new_password"].
func (s *Service) PreparePasswordChange(ctx context.Context, id int64, current, next string) (*PasswordChange, error) {
	u, err := s.users.FindUserByID(ctx, id)
	if err != nil {
		return nil, err
	}
	var f errs.Fields
	if current == "" {
		f.Add(locCurrentPassword, "Field required: your current password", "missing")
	}
	ValidatePassword(&f, locNewPassword, next, u.Username)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if ok, wait := s.perChange.Allow(strconv.FormatInt(id, 10)); !ok {
		return nil, tooMany(wait)
	}
	if ok, wait := s.perAccount.Allow(strings.ToLower(u.Username)); !ok {
		return nil, tooMany(wait)
	}
	ctx = withoutPriority(ctx)
	ok, err := s.hasher.Verify(ctx, u.PasswordHash, current)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrWrongPassword
	}
	if next == current {
		return nil, errs.Field(locNewPassword, "The new password must differ from the current one", "value_error")
	}
	hash, err := s.hasher.Hash(ctx, next)
	if err != nil {
		return nil, err
	}
	return &PasswordChange{userID: id, hash: hash}, nil
}

// ApplyPasswordChange stores a prepared change and returns the updated user:
// tokens issued before now stop working, and the user's open sessions end
// once the change has committed. It joins the transaction ctx carries, so the
// caller can record the change in the same one.
func (s *Service) ApplyPasswordChange(ctx context.Context, c *PasswordChange) (*User, error) {
	now := s.now().UTC()
	u, err := s.users.UpdateUser(ctx, c.userID, func(u *User, _ int) error {
		u.PasswordHash, u.PasswordChangedAt, u.UpdatedAt = c.hash, now, now
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.endSessions(ctx, c.userID, ErrPasswordChanged)
	return u, nil
}

// IssueToken returns a fresh access token for u, as a login would; for a
// caller who has just proven their password some other way (a password change).
func (s *Service) IssueToken(u *User) (string, error) { return s.tokens.Issue(u) }
