// Package profile provides a user's own profile: full name, bio, e-mail,
// password and avatar. Every operation acts on the caller only, and every
// change is recorded as activity in the same transaction as the change.
package profile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"tuxlab/internal/activity"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
)

// Profile is a user's own view of their account.
type Profile struct {
	ID        int64
	Username  string
	Email     string
	Role      auth.Role
	FullName  string
	Bio       string
	Avatar    string // the avatar's file name in Storage; "" for none
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Limits on profile fields, in characters (Unicode code points).
const (
	MaxFullNameLen = 100
	MaxBioLen      = 1000
)

// Update is a change to a profile: nil fields stay as they are; an empty
// FullName or Bio clears it.
type Update struct {
	FullName *string
	Bio      *string
	Email    *string
}

// validate checks and normalises every field given, reporting all problems at
// once: full_name is one line of at most 100 characters, bio at most 1000
// (line breaks and tabs allowed, no other control characters), the e-mail
// follows the registration rules. Surrounding spaces are trimmed.
func (u *Update) validate() error {
	var f errs.Fields
	if u.FullName != nil {
		v := strings.TrimSpace(*u.FullName)
		loc := []any{"full_name"}
		switch {
		case utf8.RuneCountInString(v) > MaxFullNameLen:
			f.Add(loc, "Full name must be at most 100 characters long", "string_too_long")
		case strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }):
			f.Add(loc, "Full name must be one line, without control characters", "value_error")
		}
		u.FullName = &v
	}
	if u.Bio != nil {
		v := strings.TrimSpace(strings.ReplaceAll(*u.Bio, "\r\n", "\n"))
		loc := []any{"bio"}
		switch {
		case utf8.RuneCountInString(v) > MaxBioLen:
			f.Add(loc, "Bio must be at most 1000 characters long", "string_too_long")
		case strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }):
			f.Add(loc, "Bio must not contain control characters other than line breaks and tabs", "value_error")
		}
		u.Bio = &v
	}
	if u.Email != nil {
		v := auth.NormalizeEmail(&f, []any{"email"}, *u.Email)
		u.Email = &v
	}
	return f.Err()
}

// apply sets the fields given on p and reports whether anything changed.
func (u *Update) apply(p *Profile) bool {
	changed := false
	set := func(dst *string, v *string) {
		if v != nil && *dst != *v {
			*dst, changed = *v, true
		}
	}
	set(&p.FullName, u.FullName)
	set(&p.Bio, u.Bio)
	set(&p.Email, u.Email)
	return changed
}

// Store keeps profiles: the profile columns of the users table. A missing
// user is auth.ErrUserNotFound. Writes join the transaction ctx carries.
type Store interface {
	// FindProfile returns user id's profile.
	FindProfile(ctx context.Context, id int64) (*Profile, error)
	// UpdateProfile locks user id's row, calls change on its profile and
	// stores what change left (change returns an error to abort), in one
	// transaction. An e-mail another user has is auth.ErrEmailTaken.
	UpdateProfile(ctx context.Context, id int64, change func(p *Profile) error) (*Profile, error)
}

// Accounts is what the profile needs of auth for a password change: the
// checks and the bcrypt work first, outside any transaction, then the write.
type Accounts interface {
	PreparePasswordChange(ctx context.Context, id int64, current, next string) (*auth.PasswordChange, error)
	ApplyPasswordChange(ctx context.Context, c *auth.PasswordChange) (*auth.User, error)
	IssueToken(u *auth.User) (string, error)
}

var _ Accounts = (*auth.Service)(nil)

// Service is the profile domain.
type Service struct {
	store    Store
	accounts Accounts
	activity activity.Log
	files    Storage
	decoder  *decoder     // runs the image work of uploads, bounded
	logger   *slog.Logger // clean-ups that fail without failing a request
	// Now is the clock; tests may pin it.
	Now func() time.Time
}

// Options tune a Service; the zero value is the defaults.
type Options struct {
	// Log hears of clean-ups that failed, such as an old avatar file that
	// could not be removed (nil: the default logger).
	Log *slog.Logger
	// Decoders is how many uploads' images are decoded at once (0:
	// DefaultDecoders); WaitingPerDecoder uploads per decoder may wait.
	Decoders int
	// DecodeTimeout is how long an upload waits for its image, queue
	// included (0: DefaultDecodeTimeout).
	DecodeTimeout time.Duration
	// Normalize does the image work of an upload that passed Check (nil:
	// Normalize); tests slow it down.
	Normalize func(data []byte) ([]byte, error)
}

// NewService returns a Service over store, changing passwords through
// accounts, recording activity in records (nil: nowhere) and keeping avatar
// files in files.
func NewService(store Store, accounts Accounts, records activity.Log, files Storage, o Options) *Service {
	if records == nil {
		records = activity.Discard
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Normalize == nil {
		o.Normalize = Normalize
	}
	return &Service{
		store: store, accounts: accounts, activity: records, files: files, logger: o.Log,
		decoder: newDecoder(o.Normalize, o.Decoders, o.DecodeTimeout),
		Now:     time.Now,
	}
}

// Stop answers every upload waiting for its image to be decoded, and every
// later one, with 503 (ErrDecodeStopped) at once: for a server that is
// shutting down, which must not wait for decodes. A decode that has started
// runs to its end in the background; the process may exit before.
func (s *Service) Stop() { s.decoder.stop() }

func (s *Service) stamp() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// record writes one activity record of the user in the transaction ctx carries.
func (s *Service) record(ctx context.Context, userID int64, kind activity.Kind, title string, at time.Time) error {
	return s.activity.Record(ctx, &activity.Event{UserID: userID, Kind: kind, At: at, Title: title})
}

// Profile returns user id's profile.
func (s *Service) Profile(ctx context.Context, id int64) (*Profile, error) {
	return s.store.FindProfile(ctx, id)
}

// Update changes user id's full name, bio or e-mail and records
// profile_updated in the same transaction; a request that changes nothing
// records nothing. Invalid fields are 422; an e-mail another account has is
// 409 `Email already registered`.
func (s *Service) Update(ctx context.Context, id int64, u Update) (*Profile, error) {
	if err := u.validate(); err != nil {
		return nil, err
	}
	now := s.stamp()
	var p *Profile
	err := s.activity.InTx(ctx, func(ctx context.Context) error {
		changed := false
		var err error
		p, err = s.store.UpdateProfile(ctx, id, func(p *Profile) error {
			if changed = u.apply(p); changed {
				p.UpdatedAt = now
			}
			return nil
		})
		if err != nil || !changed {
			return err
		}
		return s.record(ctx, id, activity.ProfileUpdated, "Profile updated", now)
	})
	return p, err
}

// ChangePassword changes user id's own password after checking the current
// one (see auth.Service.PreparePasswordChange for the rules and errors) and
// records password_changed in the same transaction. Every token issued before
// the change stops working; the one returned is issued after it.
func (s *Service) ChangePassword(ctx context.Context, id int64, current, next string) (string, error) {
	c, err := s.accounts.PreparePasswordChange(ctx, id, current, next)
	if err != nil {
		return "", err
	}
	var u *auth.User
	err = s.activity.InTx(ctx, func(ctx context.Context) error {
		var err error
		if u, err = s.accounts.ApplyPasswordChange(ctx, c); err != nil {
			return err
		}
		return s.record(ctx, id, activity.PasswordChanged, "Password changed", s.stamp())
	})
	if err != nil {
		return "", err
	}
	return s.accounts.IssueToken(u)
}

// SetAvatar makes data, an uploaded image, user id's avatar: the image is
// checked and re-encoded (see Check and Normalize; a busy or slow decode is
// 503, see Options) and stored under a new random name,
// then the profile names it and avatar_changed is recorded, in one
// transaction. The new file is removed again if that transaction fails; the
// previous avatar's file is removed once it has committed.
func (s *Service) SetAvatar(ctx context.Context, id int64, data []byte) (*Profile, error) {
	img, err := s.normalize(ctx, data)
	if err != nil {
		return nil, err
	}
	name, err := newAvatarName()
	if err != nil {
		return nil, err
	}
	if err := s.files.Put(ctx, name, img); err != nil {
		return nil, err
	}
	now := s.stamp()
	var (
		p   *Profile
		old string
	)
	err = s.activity.InTx(ctx, func(ctx context.Context) error {
		var err error
		p, err = s.store.UpdateProfile(ctx, id, func(p *Profile) error {
			old, p.Avatar, p.UpdatedAt = p.Avatar, name, now
			return nil
		})
		if err != nil {
			return err
		}
		return s.record(ctx, id, activity.AvatarChanged, "Avatar changed", now)
	})
	if err != nil {
		s.remove(ctx, name)
		return nil, err
	}
	s.remove(ctx, old)
	return p, nil
}

// DeleteAvatar removes user id's avatar and records avatar_changed in the
// same transaction; the file is removed once that has committed. Without an
// avatar it changes and records nothing.
func (s *Service) DeleteAvatar(ctx context.Context, id int64) (*Profile, error) {
	now := s.stamp()
	var (
		p   *Profile
		old string
	)
	err := s.activity.InTx(ctx, func(ctx context.Context) error {
		var err error
		p, err = s.store.UpdateProfile(ctx, id, func(p *Profile) error {
			if old = p.Avatar; old != "" {
				p.Avatar, p.UpdatedAt = "", now
			}
			return nil
		})
		if err != nil || old == "" {
			return err
		}
		return s.record(ctx, id, activity.AvatarChanged, "Avatar removed", now)
	})
	if err != nil {
		return nil, err
	}
	s.remove(ctx, old)
	return p, nil
}

// DeleteUser runs remove, which deletes user id (the admin operation), in one
// transaction with the user's row locked, and removes the user's avatar file
// once that has committed, so no upload can slip in between.
func (s *Service) DeleteUser(ctx context.Context, id int64, remove func(ctx context.Context) error) error {
	var avatar string
	err := s.activity.InTx(ctx, func(ctx context.Context) error {
		if _, err := s.store.UpdateProfile(ctx, id, func(p *Profile) error { avatar = p.Avatar; return nil }); err != nil {
			return err
		}
		return remove(ctx)
	})
	if err != nil {
		return err
	}
	s.remove(ctx, avatar)
	return nil
}

// OpenAvatar opens an avatar file by name for serving; anything but the name
// of a stored avatar is ErrAvatarNotFound.
func (s *Service) OpenAvatar(ctx context.Context, name string) (fs.File, error) {
	if !ValidAvatarName(name) {
		return nil, ErrAvatarNotFound
	}
	return s.files.Open(ctx, name)
}

// normalize refuses at once what Check refuses, then has the image decoded
// and re-encoded off the request's goroutine, bounded in concurrency and
// time (see decoder.run): when the client goes away, the time is up or the
// server stops, the request ends at once, whatever the decode does.
func (s *Service) normalize(ctx context.Context, data []byte) ([]byte, error) {
	if err := Check(data); err != nil {
		return nil, err
	}
	return s.decoder.run(ctx, data)
}

// remove deletes an avatar file that no row names any more; a failure is
// logged, not returned: the change it follows has happened.
func (s *Service) remove(ctx context.Context, name string) {
	if name == "" {
		return
	}
	if err := s.files.Delete(context.WithoutCancel(ctx), name); err != nil {
		s.logger.WarnContext(ctx, "could not remove an avatar file", "name", name, "error", err.Error())
	}
}

// newAvatarName returns a fresh, unguessable avatar file name: 128 random
// bits in hex, then ".png".
func newAvatarName() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b) + ".png", nil
}

// ValidAvatarName reports whether name has the form of an avatar file name:
// 32 lower-case hex digits and ".png", so it never names a directory, a
// hidden or temporary file, or anything outside the avatar directory.
func ValidAvatarName(name string) bool {
	hexPart, ok := strings.CutSuffix(name, ".png")
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, c := range hexPart {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
