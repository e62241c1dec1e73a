package auth

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image/png"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"tuxlab/internal/errs"
)

// Two-factor sign-in: TOTP (RFC 6238) as authenticator apps read it, SHA-1,
// six digits, 30-second steps, one step of clock drift either way, and
// one-time recovery codes. docs/mfa.md tells the whole story.

// Errors of two-factor sign-in. ErrMFARequired and ErrMFACodeWrong are what
// a login answers; their details are part of the API (docs/mfa.md).
var (
	ErrMFARequired  = errs.E(errs.Unauthenticated, "Two-factor code required")
	ErrMFACodeWrong = errs.E(errs.Unauthenticated, "Incorrect two-factor code")
	ErrMFAAlreadyOn = errs.E(errs.Conflict, "Two-factor sign-in is already on: turn it off first")
	ErrMFANotSetUp  = errs.E(errs.Conflict, "No two-factor setup is pending: call POST /api/auth/mfa/setup first")
	ErrMFAOff       = errs.E(errs.Conflict, "Two-factor sign-in is not on")
	// ErrMFASetupRequired answers every route but the few that turn two-factor
	// sign-in on, for an admin or instructor the install requires it of.
	ErrMFASetupRequired = errs.E(errs.Forbidden, "Two-factor sign-in is required for your role: turn it on first (POST /api/auth/mfa/setup, then POST /api/auth/mfa/enable)")
)

// The fields of the two-factor routes, as their callers name them.
var (
	locCode     = []any{"code"}
	locPassword = []any{"password"}
)

func errCodeWrong() error {
	return errs.Field(locCode, "Code is incorrect or already used", "value_error")
}

// TOTP parameters: what authenticator apps assume when a URI says nothing.
const (
	totpPeriod = 30 // seconds per step
	totpSkew   = 1  // steps of drift accepted either way
	// MFAIssuer names tuxlab in the authenticator app.
	MFAIssuer = "tuxlab"
	// RecoveryCodes is how many recovery codes enabling hands out.
	RecoveryCodes = 10
	// recoveryLen is the length of a recovery code without its dashes: 12
	// characters of 32 symbols, 60 random bits.
	recoveryLen = 12
	// recoveryAlphabet leaves out i, l, o and u, which read like 1, 0 and v.
	recoveryAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"
)

// MFA is a user's two-factor state as the store keeps it. Secrets are sealed
// (see Service.seal): the store never holds one in the clear.
type MFA struct {
	UserID        int64
	Secret        []byte // sealed secret in force; nil while two-factor sign-in is off
	PendingSecret []byte // sealed secret set up and not yet confirmed; nil when none
	LastStep      int64  // time step of the last TOTP code accepted
}

// MFAStore keeps two-factor state. FindMFA returns a zero MFA (UserID set,
// nothing else) for a user who never set it up.
type MFAStore interface {
	FindMFA(ctx context.Context, userID int64) (*MFA, error)
	// SetPendingMFA stores sealed as the user's pending secret, replacing one
	// pending before.
	SetPendingMFA(ctx context.Context, userID int64, sealed []byte, at time.Time) error
	// EnableMFA turns two-factor sign-in on in one transaction: the pending
	// secret, if it is still pending, becomes the secret in force with step
	// as its last used step, users.mfa_enabled_at is set, and codeHashes
	// replace the user's recovery codes. A pending secret that changed
	// meanwhile is ErrMFANotSetUp.
	EnableMFA(ctx context.Context, userID int64, pending []byte, step int64, at time.Time, codeHashes []string) error
	// DisableMFA turns it off: secrets and recovery codes are deleted and
	// users.mfa_enabled_at cleared, in one transaction.
	DisableMFA(ctx context.Context, userID int64) error
	// UseTOTPStep records step as used if it is later than the last used one,
	// atomically, and reports whether it was.
	UseTOTPStep(ctx context.Context, userID int64, step int64) (bool, error)
	// UseRecoveryCode marks the user's unused code with hash as used at at,
	// atomically, and reports whether there was one.
	UseRecoveryCode(ctx context.Context, userID int64, hash string, at time.Time) (bool, error)
	// UnusedRecoveryCodes counts the user's recovery codes not used yet.
	UnusedRecoveryCodes(ctx context.Context, userID int64) (int, error)
	// MFARequired and SetMFARequired read and write the install's rule that
	// admins and instructors must use two-factor sign-in.
	MFARequired(ctx context.Context) (bool, error)
	SetMFARequired(ctx context.Context, required bool) error
}

// MFASetup is what setting up returns, once: the secret in base32, the
// otpauth:// URI an authenticator app reads, and that URI as a QR code (PNG).
type MFASetup struct {
	Secret string
	URI    string
	QRCode []byte
}

// SetupMFA creates a new secret for user u and keeps it pending until
// EnableMFA confirms it with a code; a second setup replaces a pending one.
// It is ErrMFAAlreadyOn while two-factor sign-in is on. The secret is
// returned here and never again.
func (s *Service) SetupMFA(ctx context.Context, u *User) (*MFASetup, error) {
	if u.MFAEnabledAt != nil {
		return nil, ErrMFAAlreadyOn
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: MFAIssuer, AccountName: u.Username,
		Period: totpPeriod, SecretSize: 20, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return nil, fmt.Errorf("generate TOTP secret: %w", err)
	}
	sealed, err := s.seal(u.ID, key.Secret())
	if err != nil {
		return nil, err
	}
	if err := s.mfa.SetPendingMFA(ctx, u.ID, sealed, s.now().UTC()); err != nil {
		return nil, err
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return nil, fmt.Errorf("QR code: %w", err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("QR code: %w", err)
	}
	return &MFASetup{Secret: key.Secret(), URI: key.URL(), QRCode: buf.Bytes()}, nil
}

// EnableMFA turns two-factor sign-in on for user u when code is a current
// code of the pending secret, and returns the recovery codes, which are
// stored only as hashes and shown this once. The code's time step counts as
// used. A wrong code is 422 at ["code"]; attempts are rate limited per
// account (429).
func (s *Service) EnableMFA(ctx context.Context, u *User, code string) ([]string, error) {
	if u.MFAEnabledAt != nil {
		return nil, ErrMFAAlreadyOn
	}
	m, err := s.mfa.FindMFA(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	if m.PendingSecret == nil {
		return nil, ErrMFANotSetUp
	}
	if err := s.allowCode(u.ID); err != nil {
		return nil, err
	}
	secret, err := s.open(u.ID, m.PendingSecret)
	if err != nil {
		return nil, ErrMFANotSetUp // sealed under another SECRET_KEY: set up again
	}
	step, ok := matchTOTP(secret, normalizeCode(code), s.totpNow(), 0)
	if !ok {
		return nil, errCodeWrong()
	}
	codes, hashes, err := newRecoveryCodes(u.ID)
	if err != nil {
		return nil, err
	}
	if err := s.mfa.EnableMFA(ctx, u.ID, m.PendingSecret, step, s.now().UTC(), hashes); err != nil {
		return nil, err
	}
	return codes, nil
}

// DisableMFA turns two-factor sign-in off for user id; it needs the
// account's password and a current code or an unused recovery code (which
// is then used). A wrong password is 422 at ["password"], a wrong code 422
// at ["code"]. Password attempts are limited as password changes are, code
// attempts as at login.
func (s *Service) DisableMFA(ctx context.Context, id int64, password, code string) error {
	u, err := s.users.FindUserByID(ctx, id)
	if err != nil {
		return err
	}
	if u.MFAEnabledAt == nil {
		return ErrMFAOff
	}
	var f errs.Fields
	if password == "" {
		f.Add(locPassword, "Field required: your password", "missing")
	}
	if strings.TrimSpace(code) == "" {
		f.Add(locCode, "Field required: a code from your app or a recovery code", "missing")
	}
	if err := f.Err(); err != nil {
		return err
	}
	if ok, wait := s.perChange.Allow(strconv.FormatInt(id, 10)); !ok {
		return tooMany(wait)
	}
	if ok, wait := s.perAccount.Allow(strings.ToLower(u.Username)); !ok {
		return tooMany(wait)
	}
	ok, err := s.hasher.Verify(withoutPriority(ctx), u.PasswordHash, password)
	if err != nil {
		return err
	}
	if !ok {
		return errs.Field(locPassword, "Password is incorrect", "value_error")
	}
	if err := s.secondFactor(ctx, id, code); err != nil {
		switch {
		case errors.Is(err, ErrMFACodeWrong):
			return errCodeWrong()
		case errors.Is(err, errSecretUnreadable):
			// A 401 here would sign the caller out: it is the code field that cannot pass.
			return errs.Field(locCode, "Your two-factor secret cannot be read on this server (its SECRET_KEY changed): use a recovery code", "value_error")
		}
		return err
	}
	return s.mfa.DisableMFA(ctx, id)
}

// ResetMFA turns two-factor sign-in off for user id without a code: for an
// admin helping a user who lost both the app and the recovery codes.
func (s *Service) ResetMFA(ctx context.Context, id int64) (*User, error) {
	if _, err := s.users.FindUserByID(ctx, id); err != nil {
		return nil, err
	}
	if err := s.mfa.DisableMFA(ctx, id); err != nil {
		return nil, err
	}
	return s.users.FindUserByID(ctx, id)
}

// RecoveryCodesLeft counts user id's unused recovery codes.
func (s *Service) RecoveryCodesLeft(ctx context.Context, id int64) (int, error) {
	return s.mfa.UnusedRecoveryCodes(ctx, id)
}

// secondFactor checks code for user id, whose two-factor sign-in is on: a
// current TOTP code of a time step later than the last one used, or an
// unused recovery code. Either is used up by passing. Attempts are rate
// limited per account. A code that does not pass is ErrMFACodeWrong.
func (s *Service) secondFactor(ctx context.Context, id int64, code string) error {
	if err := s.allowCode(id); err != nil {
		return err
	}
	code = normalizeCode(code)
	switch {
	case isTOTPCode(code):
		m, err := s.mfa.FindMFA(ctx, id)
		if err != nil {
			return err
		}
		if m.Secret == nil {
			return ErrMFACodeWrong
		}
		secret, err := s.open(id, m.Secret)
		if err != nil {
			return errUnreadableAtLogin(err)
		}
		step, ok := matchTOTP(secret, code, s.totpNow(), m.LastStep)
		if !ok {
			return ErrMFACodeWrong
		}
		used, err := s.mfa.UseTOTPStep(ctx, id, step)
		if err != nil {
			return err
		}
		if !used { // another request used this step (or a later one) meanwhile
			return ErrMFACodeWrong
		}
		return nil
	case len(code) == recoveryLen:
		used, err := s.mfa.UseRecoveryCode(ctx, id, hashRecoveryCode(id, code), s.now().UTC())
		if err != nil {
			return err
		}
		if !used {
			return ErrMFACodeWrong
		}
		return nil
	}
	return ErrMFACodeWrong
}

// allowCode takes one code attempt of user id's: TUXLAB_AUTH_RATE_USER an
// hour, so that guessing six digits stays hopeless even for someone who has
// the password.
func (s *Service) allowCode(id int64) error {
	if ok, wait := s.perCode.Allow(strconv.FormatInt(id, 10)); !ok {
		return tooMany(wait)
	}
	return nil
}

// normalizeCode removes the spaces and dashes people type or paste inside a
// code, and lowers its case.
func normalizeCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '\t':
			return -1
		}
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, code)
}

func isTOTPCode(code string) bool {
	return len(code) == 6 && allDigits(code)
}

// matchTOTP returns the time step, later than after, within totpSkew steps of
// now, whose code is code. Every candidate is compared in constant time.
func matchTOTP(secret, code string, now time.Time, after int64) (int64, bool) {
	if !isTOTPCode(code) {
		return 0, false
	}
	cur := now.Unix() / totpPeriod
	found, match := int64(0), false
	for step := cur - totpSkew; step <= cur+totpSkew; step++ {
		if step <= after {
			continue
		}
		want, err := hotp.GenerateCodeCustom(secret, uint64(step), hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && !match {
			found, match = step, true
		}
	}
	return found, match
}

// newRecoveryCodes returns RecoveryCodes fresh codes as the user reads them
// (xxxx-xxxx-xxxx) and their hashes as the store keeps them.
func newRecoveryCodes(userID int64) (codes, hashes []string, err error) {
	for range RecoveryCodes {
		b := make([]byte, recoveryLen)
		if _, err := rand.Read(b); err != nil {
			return nil, nil, err
		}
		for i := range b {
			b[i] = recoveryAlphabet[int(b[i])%len(recoveryAlphabet)] // 256 is a multiple of 32: no bias
		}
		c := string(b)
		codes = append(codes, c[:4]+"-"+c[4:8]+"-"+c[8:])
		hashes = append(hashes, hashRecoveryCode(userID, c))
	}
	return codes, hashes, nil
}

// hashRecoveryCode is what the store keeps of a normalised recovery code:
// SHA-256, bound to the user. A code has 60 random bits, so a fast hash is
// enough against a stolen database (bcrypt is for guessable passwords), and
// no key is involved, so a new SECRET_KEY leaves recovery codes working.
func hashRecoveryCode(userID int64, code string) string {
	sum := sha256.Sum256([]byte("tuxlab recovery code\x00" + strconv.FormatInt(userID, 10) + "\x00" + code))
	return hex.EncodeToString(sum[:])
}

// errUnreadableAtLogin tells a user whose secret no longer opens what still
// works: the recovery codes, which no key protects.
func errUnreadableAtLogin(err error) error {
	return &errs.Error{Kind: errs.Unauthenticated, Err: err,
		Detail: "Your two-factor secret cannot be read on this server (its SECRET_KEY changed): use a recovery code"}
}

// mfaKeyLabel separates the key that seals TOTP secrets from every other use
// of SECRET_KEY.
const mfaKeyLabel = "tuxlab mfa secret key v1\x00"

// sealVersion is the first byte of a sealed secret.
const sealVersion = 1

// errSecretUnreadable is a sealed secret that does not open: SECRET_KEY changed.
var errSecretUnreadable = errors.New("two-factor secret cannot be opened: SECRET_KEY changed since it was set up")

// seal encrypts a TOTP secret for user id with AES-256-GCM under a key
// derived from SECRET_KEY; the user id is authenticated with it, so a sealed
// secret copied to another user's row does not open.
func (s *Service) seal(userID int64, secret string) ([]byte, error) {
	aead, err := s.mfaAEAD()
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte{sealVersion}, nonce...)
	return aead.Seal(out, nonce, []byte(secret), sealAD(userID)), nil
}

// open decrypts what seal made for user id.
func (s *Service) open(userID int64, sealed []byte) (string, error) {
	aead, err := s.mfaAEAD()
	if err != nil {
		return "", err
	}
	n := aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return "", errSecretUnreadable
	}
	plain, err := aead.Open(nil, sealed[1:1+n], sealed[1+n:], sealAD(userID))
	if err != nil {
		return "", errSecretUnreadable
	}
	return string(plain), nil
}

func sealAD(userID int64) []byte { return []byte("user " + strconv.FormatInt(userID, 10)) }

func (s *Service) mfaAEAD() (cipher.AEAD, error) {
	m := hmac.New(sha256.New, s.tokens.secret)
	m.Write([]byte(mfaKeyLabel))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// MFARequired reports whether the install requires two-factor sign-in of
// admins and instructors.
func (s *Service) MFARequired(ctx context.Context) (bool, error) {
	return s.required.get(ctx, s.mfa, s.now())
}

// SetMFARequired sets whether the install requires two-factor sign-in of
// admins and instructors.
func (s *Service) SetMFARequired(ctx context.Context, required bool) error {
	if err := s.mfa.SetMFARequired(ctx, required); err != nil {
		return err
	}
	s.users.AfterCommit(ctx, func() { s.required.forget() })
	return nil
}

// MFARequiredOf reports whether u must turn two-factor sign-in on before
// using anything but the routes that do so: an admin or instructor without
// it, on an install that requires it.
func (s *Service) MFARequiredOf(ctx context.Context, u *User) (bool, error) {
	if u.MFAEnabledAt != nil || u.Role == RoleStudent {
		return false, nil
	}
	return s.MFARequired(ctx)
}

// requiredCache keeps the install's MFA rule for requiredTTL: the
// per-request check of admins and instructors without two-factor sign-in
// reads it, and it changes rarely. A change through this process applies at
// once; one made by another replica within requiredTTL.
type requiredCache struct {
	mu       sync.Mutex
	value    bool
	readAt   time.Time
	hasValue bool
	gen      uint64 // counts forgets: a read that began before one is not kept
}

// requiredTTL bounds how long another replica's change of the rule takes to apply here.
const requiredTTL = 2 * time.Second

func (c *requiredCache) get(ctx context.Context, st MFAStore, now time.Time) (bool, error) {
	c.mu.Lock()
	if c.hasValue && now.Sub(c.readAt) < requiredTTL && !now.Before(c.readAt) {
		v := c.value
		c.mu.Unlock()
		return v, nil
	}
	gen := c.gen
	c.mu.Unlock()
	v, err := st.MFARequired(ctx)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	if c.gen == gen {
		c.value, c.readAt, c.hasValue = v, now, true
	}
	c.mu.Unlock()
	return v, nil
}

func (c *requiredCache) forget() {
	c.mu.Lock()
	c.hasValue = false
	c.gen++
	c.mu.Unlock()
}

// QRDataURI returns a PNG as a data: URI, for an <img> without another request.
func QRDataURI(png []byte) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
}
