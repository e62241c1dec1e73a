package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"tuxlab/internal/errs"
	"tuxlab/internal/mail"
)

// OneTimeToken is a mailed link's token as the store keeps it: only the
// hex SHA-256 of the token, whose account it is, when it expires and when
// it was used. Password reset and e-mail verification each keep theirs in
// a table of their own, so a link of one can never serve the other.
type OneTimeToken struct {
	ID        int64
	UserID    int64
	TokenHash string // hex
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
}

// PasswordReset is a password reset link's token.
type PasswordReset = OneTimeToken

// tokenErrors are what a link answers when its token is unknown, used or
// expired.
type tokenErrors struct{ unknown, used, expired error }

// usableToken returns t, as the store found it by its hash (err: the
// store's answer), if it may still be used at now.
func usableToken(t *OneTimeToken, err error, now time.Time, e tokenErrors) (*OneTimeToken, error) {
	switch {
	case errs.Is(err, errs.NotFound):
		return nil, e.unknown
	case err != nil:
		return nil, err
	case t.UsedAt != nil:
		return nil, e.used
	case !now.Before(t.ExpiresAt):
		return nil, e.expired
	}
	return t, nil
}

// ResetStore keeps password reset tokens. Its writes join the transaction
// ctx carries (InTx).
type ResetStore interface {
	// FindUserByEmail returns the user with e-mail email (lower-case), or
	// an errs.NotFound error.
	FindUserByEmail(ctx context.Context, email string) (*User, error)
	CreatePasswordReset(ctx context.Context, r *PasswordReset) error
	// CountPasswordResets locks user userID's row until the end of the
	// transaction ctx carries and counts the resets made for the user at
	// or after since, so two replicas cannot both pass a bound on it.
	CountPasswordResets(ctx context.Context, userID int64, since time.Time) (int, error)
	// FindPasswordReset returns the reset whose token has hash tokenHash,
	// its row locked until the end of the transaction ctx carries, or an
	// errs.NotFound error.
	FindPasswordReset(ctx context.Context, tokenHash string) (*PasswordReset, error)
	// UsePasswordResets marks every unused reset of user userID used at now.
	UsePasswordResets(ctx context.Context, userID int64, now time.Time) error
	// InTx runs fn in one transaction that the store writes made with its
	// context join.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Mailer queues mail (mail.Queue).
type Mailer interface {
	// Enabled reports whether a mail server is configured.
	Enabled() bool
	// Enqueue queues m in the transaction ctx carries.
	Enqueue(ctx context.Context, m mail.Message) error
}

// ResetOptions configure password reset.
type ResetOptions struct {
	Store ResetStore
	Mail  Mailer
	// PublicURL is the site's address as users reach it
	// (TUXLAB_PUBLIC_URL, no trailing slash): the mail links to
	// PublicURL/reset-password?token=...
	PublicURL string
	// TTL is how long a token is valid: ResetTokenTTL when zero.
	TTL time.Duration
	// PerAddressPerHour bounds the mails asked for one address:
	// ResetsPerAddressPerHour when zero.
	PerAddressPerHour int
	// LimitsNow is the clock of the per-address limit (nil: time.Now).
	LimitsNow func() time.Time
}

// Defaults of password reset.
const (
	ResetTokenTTL           = time.Hour
	ResetsPerAddressPerHour = 5
	// resetTokenBytes is the token's randomness: 32 bytes, 43 characters
	// of unpadded base64url in the link.
	resetTokenBytes = 32
)

// Errors of password reset.
var (
	ErrResetOff = errs.E(errs.Unavailable, "Password reset is off: this server has no mail server configured (TUXLAB_SMTP_URL); ask an administrator")
	// A token that is not one, whatever its shape: nobody can tell a
	// mistyped link from a forged one.
	ErrResetUnknown = errs.E(errs.BadRequest, "This password reset link is not valid: ask for a new one")
	ErrResetUsed    = errs.E(errs.BadRequest, "This password reset link was already used (or a newer one was): ask for a new one")
	ErrResetExpired = errs.E(errs.BadRequest, "This password reset link has expired: ask for a new one")
)

// Resets is password reset by e-mail: a one-time token, valid for an hour,
// mailed as a link, that sets a new password.
type Resets struct {
	svc        *Service
	store      ResetStore
	mail       Mailer
	publicURL  string
	ttl        time.Duration
	perAddress *RateLimiter
	perHour    int // resets mailed to one account in an hour, counted in the database
}

// NewResets returns password reset over s's accounts.
func (s *Service) NewResets(o ResetOptions) *Resets {
	if o.TTL <= 0 {
		o.TTL = ResetTokenTTL
	}
	if o.PerAddressPerHour <= 0 {
		o.PerAddressPerHour = ResetsPerAddressPerHour
	}
	if o.LimitsNow == nil {
		o.LimitsNow = time.Now
	}
	return &Resets{svc: s, store: o.Store, mail: o.Mail, publicURL: strings.TrimRight(o.PublicURL, "/"), ttl: o.TTL,
		perAddress: NewRateLimiterPer(o.PerAddressPerHour, time.Hour, o.LimitsNow), perHour: o.PerAddressPerHour}
}

// Enabled reports whether password reset works: mail can be sent.
func (r *Resets) Enabled() bool { return r.mail != nil && r.mail.Enabled() }

// Forgot mails a reset link to the account with e-mail email, if there is
// an active one. Known and unknown addresses get the same answer after the
// same work (a token is made, hashed and its mail written either way); the
// difference, two row inserts, costs no bcrypt. A malformed address is 422
// at ["email"]; more than PerAddressPerHour asks for one address in an hour
// are 429, known or not. The caller rate limits the client.
func (r *Resets) Forgot(ctx context.Context, email string) error {
	if !r.Enabled() {
		return ErrResetOff
	}
	var f errs.Fields
	email = NormalizeEmail(&f, []any{"email"}, email)
	if err := f.Err(); err != nil {
		return err
	}
	if ok, wait := r.perAddress.Allow(email); !ok {
		return tooMany(wait)
	}
	token, hash, err := newResetToken()
	if err != nil {
		return err
	}
	u, err := r.store.FindUserByEmail(ctx, email)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	name := ""
	if u != nil {
		name = u.Username
	}
	msg := r.resetMail(email, name, token)
	if u == nil || !u.IsActive {
		return nil // nothing to tell: the answer is the same
	}
	now := r.svc.now().UTC().Truncate(time.Microsecond)
	return r.store.InTx(ctx, func(ctx context.Context) error {
		// The limiter above is this process's; the bound on the mails an
		// account receives holds across replicas, counted on its rows. Past
		// it the answer stays the same: a 429 here would tell who has an
		// account.
		n, err := r.store.CountPasswordResets(ctx, u.ID, now.Add(-time.Hour))
		if err != nil {
			return err
		}
		if n >= r.perHour {
			return nil
		}
		if err := r.store.CreatePasswordReset(ctx, &PasswordReset{UserID: u.ID, TokenHash: hash,
			ExpiresAt: now.Add(r.ttl), CreatedAt: now}); err != nil {
			return err
		}
		return r.mail.Enqueue(ctx, msg)
	})
}

// Reset sets the password of the account a reset token was made for, if
// the token is known, unused and unexpired (else 400), and the password
// passes the registration rules (else 422 at ["new_password"]). In one
// transaction: the password changes, every reset token of the account is
// used up, and every token issued before now is refused from then on; the
// account's open sessions (terminals) end once it has committed. The
// caller rate limits the client.
func (r *Resets) Reset(ctx context.Context, token, password string) error {
	if !r.Enabled() {
		return ErrResetOff
	}
	hash, ok := resetTokenHash(token)
	if !ok {
		return ErrResetUnknown
	}
	now := r.svc.now().UTC().Truncate(time.Microsecond)
	pr, err := r.usable(ctx, hash, now)
	if err != nil {
		return err
	}
	u, err := r.svc.users.FindUserByID(ctx, pr.UserID)
	if errs.Is(err, errs.NotFound) {
		return ErrResetUnknown // the account is gone (its tokens with it)
	}
	if err != nil {
		return err
	}
	var f errs.Fields
	ValidatePassword(&f, locNewPassword, password, u.Username)
	if err := f.Err(); err != nil {
		return err
	}
	// bcrypt outside the transaction, in the ordinary lane: whoever holds
	// a link is no known client.
	pwHash, err := r.svc.hasher.Hash(withoutPriority(ctx), password)
	if err != nil {
		return err
	}
	return r.store.InTx(ctx, func(ctx context.Context) error {
		// Again, locked: of two uses at once, one wins.
		if _, err := r.usable(ctx, hash, now); err != nil {
			return err
		}
		if _, err := r.svc.users.UpdateUser(ctx, u.ID, func(u *User, _ int) error {
			u.PasswordHash, u.PasswordChangedAt, u.TokensRevokedAt, u.UpdatedAt = pwHash, now, &now, now
			return nil
		}); err != nil {
			return err
		}
		if err := r.store.UsePasswordResets(ctx, u.ID, now); err != nil {
			return err
		}
		r.svc.endSessions(ctx, u.ID, ErrPasswordChanged)
		return nil
	})
}

// usable returns the reset with token hash hash if it may still be used at now.
func (r *Resets) usable(ctx context.Context, hash string, now time.Time) (*PasswordReset, error) {
	pr, err := r.store.FindPasswordReset(ctx, hash)
	return usableToken(pr, err, now, tokenErrors{ErrResetUnknown, ErrResetUsed, ErrResetExpired})
}

// resetMail is the mail that carries token to email.
func (r *Resets) resetMail(email, username, token string) mail.Message {
	link := r.publicURL + "/reset-password?token=" + token
	var b strings.Builder
	if username != "" {
		fmt.Fprintf(&b, "Hello %s,\n\n", username)
	}
	fmt.Fprintf(&b, "Someone (we hope you) asked to reset the password of your tuxlab account at %s.\n\n", r.publicURL)
	fmt.Fprintf(&b, "To choose a new password, open this link within %s:\n\n%s\n\n", ttlWords(r.ttl), link)
	b.WriteString("The link works once. Setting a new password signs you out everywhere.\n\n")
	b.WriteString("If you did not ask for this, ignore this mail: your password stays as it is.\n")
	return mail.Message{To: email, Subject: "Reset your tuxlab password", Body: b.String()}
}

// ttlWords says how long a mailed link is valid, for its mail.
func ttlWords(d time.Duration) string {
	switch d {
	case time.Hour:
		return "an hour"
	case 24 * time.Hour:
		return "24 hours"
	}
	return d.String()
}

// newResetToken returns a random token and the hex SHA-256 the store keeps.
func newResetToken() (token, hash string, err error) {
	b := make([]byte, resetTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:]), nil
}

// resetTokenHash returns the hash of token, or false when token cannot be
// one newResetToken made.
func resetTokenHash(token string) (string, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) != resetTokenBytes {
		return "", false
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:]), true
}
