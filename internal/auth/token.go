package auth

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Claims are the contents of an access token. The issue time is kept to the
// microsecond (RFC 7519 allows a fractional NumericDate) so that a password
// change invalidates exactly the tokens issued before it, even within a second.
type Claims struct {
	Subject  string  `json:"sub"`
	Username string  `json:"username"`
	IssuedAt float64 `json:"iat"`
	Expires  int64   `json:"exp"`
}

var _ jwt.Claims = Claims{}

// UserID returns the subject as a user id.
func (c Claims) UserID() (int64, error) { return strconv.ParseInt(c.Subject, 10, 64) }

// Issued returns the issue time.
func (c Claims) Issued() time.Time {
	sec, frac := math.Modf(c.IssuedAt)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

// GetExpirationTime implements jwt.Claims.
func (c Claims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.Expires, 0)), nil
}

// GetIssuedAt implements jwt.Claims.
func (c Claims) GetIssuedAt() (*jwt.NumericDate, error) { return jwt.NewNumericDate(c.Issued()), nil }

// GetNotBefore implements jwt.Claims.
func (c Claims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer implements jwt.Claims.
func (c Claims) GetIssuer() (string, error) { return "", nil }

// GetSubject implements jwt.Claims.
func (c Claims) GetSubject() (string, error) { return c.Subject, nil }

// GetAudience implements jwt.Claims.
func (c Claims) GetAudience() (jwt.ClaimStrings, error) { return nil, nil }

// Tokens issues and checks HS256 access tokens.
type Tokens struct {
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// NewTokens returns a token issuer signing with secret; tokens live for ttl.
// now is the clock (nil for time.Now).
func NewTokens(secret []byte, ttl time.Duration, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{secret: secret, ttl: ttl, now: now}
}

// Issue returns a signed token for u.
func (t *Tokens) Issue(u *User) (string, error) {
	now := t.now().UTC().Truncate(time.Microsecond)
	c := Claims{
		Subject:  strconv.FormatInt(u.ID, 10),
		Username: u.Username,
		IssuedAt: float64(now.UnixMicro()) / 1e6,
		Expires:  now.Add(t.ttl).Unix(),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
}

// errBadToken is returned for every token that does not verify; the reason is not told.
var errBadToken = errors.New("invalid token")

// Parse verifies a token's signature, algorithm and expiry and returns its claims.
func (t *Tokens) Parse(token string) (Claims, error) {
	return t.parse(token, jwt.WithExpirationRequired(), jwt.WithTimeFunc(t.now))
}

// parseExpired is Parse without the expiry: for a session that was opened
// while its token was valid.
func (t *Tokens) parseExpired(token string) (Claims, error) {
	return t.parse(token, jwt.WithoutClaimsValidation())
}

func (t *Tokens) parse(token string, opts ...jwt.ParserOption) (Claims, error) {
	var c Claims
	opts = append(opts, jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}))
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil }, opts...)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", errBadToken, err)
	}
	if _, err := c.UserID(); err != nil || c.Username == "" {
		return Claims{}, errBadToken
	}
	return c, nil
}
