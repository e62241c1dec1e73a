package auth

import (
	"context"
	"fmt"
	"strings"
	"time"

	"tuxlab/internal/errs"
	"tuxlab/internal/mail"
)

// EmailVerification is an e-mail verification link's token.
type EmailVerification = OneTimeToken

// VerificationStore keeps e-mail verification tokens. Its writes join the
// transaction ctx carries (InTx).
type VerificationStore interface {
	// FindUserByEmail returns the user with e-mail email (lower-case), or
	// an errs.NotFound error.
	FindUserByEmail(ctx context.Context, email string) (*User, error)
	CreateEmailVerification(ctx context.Context, v *EmailVerification) error
	// FindEmailVerification returns the verification whose token has hash
	// tokenHash, its row locked until the end of the transaction ctx
	// carries, or an errs.NotFound error.
	FindEmailVerification(ctx context.Context, tokenHash string) (*EmailVerification, error)
	// UseEmailVerifications marks every unused verification of user userID used at now.
	UseEmailVerifications(ctx context.Context, userID int64, now time.Time) error
	// InTx runs fn in one transaction that the store writes made with its
	// context join.
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// VerifyOptions configure e-mail verification.
type VerifyOptions struct {
	Store VerificationStore
	Mail  Mailer
	// PublicURL is the site's address (no trailing slash): the mail links
	// to PublicURL/verify-email?token=...
	PublicURL string
	// TTL is how long a token is valid: VerifyTokenTTL when zero.
	TTL time.Duration
	// PerAddressPerHour bounds the mails asked for one address:
	// ResetsPerAddressPerHour when zero.
	PerAddressPerHour int
	// LimitsNow is the clock of the per-address limit (nil: time.Now).
	LimitsNow func() time.Time
}

// VerifyTokenTTL is how long a verification link is valid by default.
const VerifyTokenTTL = 24 * time.Hour

// Errors of e-mail verification. ErrEmailUnverified is what a login of an
// unverified account answers; its detail is part of the API (docs/accounts.md).
var (
	ErrEmailUnverified = errs.E(errs.Forbidden, "Confirm your e-mail address: we sent you a link")
	ErrVerifyOff       = errs.E(errs.Unavailable, "E-mail verification is off on this server: accounts need no confirmation")
	ErrVerifyUnknown   = errs.E(errs.BadRequest, "This e-mail confirmation link is not valid: ask for a new one")
	ErrVerifyUsed      = errs.E(errs.BadRequest, "This e-mail confirmation link was already used (or a newer one was): sign in, or ask for a new one")
	ErrVerifyExpired   = errs.E(errs.BadRequest, "This e-mail confirmation link has expired: ask for a new one")
)

// Verifications is e-mail verification on registration: a new account gets
// a one-time link, valid for a day, and cannot sign in until it is opened.
type Verifications struct {
	svc        *Service
	store      VerificationStore
	mail       Mailer
	publicURL  string
	ttl        time.Duration
	perAddress *RateLimiter
}

// NewVerifications turns e-mail verification on for s's registrations and
// logins and returns it. Accounts that admins or the command line create
// count as verified.
func (s *Service) NewVerifications(o VerifyOptions) *Verifications {
	if o.TTL <= 0 {
		o.TTL = VerifyTokenTTL
	}
	if o.PerAddressPerHour <= 0 {
		o.PerAddressPerHour = ResetsPerAddressPerHour
	}
	if o.LimitsNow == nil {
		o.LimitsNow = time.Now
	}
	v := &Verifications{svc: s, store: o.Store, mail: o.Mail, publicURL: strings.TrimRight(o.PublicURL, "/"), ttl: o.TTL,
		perAddress: NewRateLimiterPer(o.PerAddressPerHour, time.Hour, o.LimitsNow)}
	s.verify = v
	return v
}

// VerificationRequired reports whether a registration must confirm its
// e-mail address before signing in.
func (s *Service) VerificationRequired() bool { return s.verify != nil }

// register creates the student account n unverified and queues its
// verification mail in the same transaction: an account never exists
// without its link on the way.
func (v *Verifications) register(ctx context.Context, u *User) error {
	token, hash, err := newResetToken()
	if err != nil {
		return err
	}
	return v.store.InTx(ctx, func(ctx context.Context) error {
		if err := v.svc.users.CreateUser(ctx, u); err != nil {
			return err
		}
		return v.send(ctx, u, token, hash)
	})
}

// send stores the hash of token for u and queues its mail, in the
// transaction ctx carries.
func (v *Verifications) send(ctx context.Context, u *User, token, hash string) error {
	now := v.svc.now().UTC().Truncate(time.Microsecond)
	if err := v.store.CreateEmailVerification(ctx, &EmailVerification{UserID: u.ID, TokenHash: hash,
		ExpiresAt: now.Add(v.ttl), CreatedAt: now}); err != nil {
		return err
	}
	link := v.publicURL + "/verify-email?token=" + token
	var b strings.Builder
	fmt.Fprintf(&b, "Hello %s,\n\n", u.Username)
	fmt.Fprintf(&b, "Someone (we hope you) created a tuxlab account at %s with this address.\n\n", v.publicURL)
	fmt.Fprintf(&b, "To confirm it and sign in, open this link within %s:\n\n%s\n\n", ttlWords(v.ttl), link)
	b.WriteString("If you did not create this account, ignore this mail: nobody can sign in with it.\n")
	return v.mail.Enqueue(ctx, mail.Message{To: u.Email, Subject: "Confirm your tuxlab e-mail address", Body: b.String()})
}

// Resend mails a new verification link to the unverified account with
// e-mail email, if there is one. Every address gets the same answer; a
// malformed one is 422 at ["email"], and more than PerAddressPerHour asks
// for one address in an hour are 429. The caller rate limits the client.
func (v *Verifications) Resend(ctx context.Context, email string) error {
	var f errs.Fields
	email = NormalizeEmail(&f, []any{"email"}, email)
	if err := f.Err(); err != nil {
		return err
	}
	if ok, wait := v.perAddress.Allow(email); !ok {
		return tooMany(wait)
	}
	token, hash, err := newResetToken()
	if err != nil {
		return err
	}
	u, err := v.store.FindUserByEmail(ctx, email)
	if err != nil && !errs.Is(err, errs.NotFound) {
		return err
	}
	if u == nil || !u.IsActive || u.EmailVerifiedAt != nil {
		return nil // nothing to tell: the answer is the same
	}
	return v.store.InTx(ctx, func(ctx context.Context) error { return v.send(ctx, u, token, hash) })
}

// Verify confirms the address of the account a verification token was made
// for, if the token is known, unused and unexpired (else 400). In one
// transaction the account is marked verified and every verification token
// of it is used up. The caller rate limits the client.
func (v *Verifications) Verify(ctx context.Context, token string) error {
	hash, ok := resetTokenHash(token)
	if !ok {
		return ErrVerifyUnknown
	}
	now := v.svc.now().UTC().Truncate(time.Microsecond)
	return v.store.InTx(ctx, func(ctx context.Context) error {
		ev, err := v.usable(ctx, hash, now)
		if err != nil {
			return err
		}
		_, err = v.svc.users.UpdateUser(ctx, ev.UserID, func(u *User, _ int) error {
			if u.EmailVerifiedAt == nil {
				u.EmailVerifiedAt, u.UpdatedAt = &now, now
			}
			return nil
		})
		if errs.Is(err, errs.NotFound) {
			return ErrVerifyUnknown // the account is gone (its tokens with it)
		}
		if err != nil {
			return err
		}
		return v.store.UseEmailVerifications(ctx, ev.UserID, now)
	})
}

// usable returns the verification with token hash hash if it may still be used at now.
func (v *Verifications) usable(ctx context.Context, hash string, now time.Time) (*EmailVerification, error) {
	ev, err := v.store.FindEmailVerification(ctx, hash)
	return usableToken(ev, err, now, tokenErrors{ErrVerifyUnknown, ErrVerifyUsed, ErrVerifyExpired})
}
