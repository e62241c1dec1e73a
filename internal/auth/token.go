package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
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

// UserID returns the subject as a user id. The subject must be the id as
// Issue writes it, a canonical decimal: digits only, no sign, space,
// exponent or leading zero, greater than zero and within int64. Any other
// spelling ("+7", "07", " 7", "7e0") is refused rather than read as 7, so
// one user id has one spelling in tokens.
func (c Claims) UserID() (int64, error) {
	s := c.Subject
	if len(s) == 0 || len(s) > 19 || s[0] < '1' || s[0] > '9' || !allDigits(s) {
		return 0, errBadToken
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errBadToken // past int64
	}
	return id, nil
}

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
	secret   []byte
	ttl      time.Duration
	now      func() time.Time
	verified verifiedTokens
}

// NewTokens returns a token issuer signing with secret; tokens live for ttl.
// now is the clock (nil for time.Now).
func NewTokens(secret []byte, ttl time.Duration, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{secret: secret, ttl: ttl, now: now, verified: verifiedTokens{claims: map[string]Claims{}}}
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

// IssuedAtSkew is how far in the future a token's issue time (iat) may lie
// and the token still be accepted: the clocks of replicas (or of the host
// that issued it) may differ a little. A token issued further ahead is
// refused until then, as RFC 7519 lets a verifier refuse a token "used
// before issued": it was made with a wrong clock or by someone holding the key.
const IssuedAtSkew = 60 * time.Second

// Parse verifies a token's signature, algorithm and expiry and returns its
// claims. It runs on every authenticated request, and a client sends the
// same token on each: the claims of a token whose signature verified are
// remembered (a token's bytes verify the same way every time under one
// secret), and only the expiry, which depends on the time, is checked again.
func (t *Tokens) Parse(token string) (Claims, error) {
	c, err := t.parseExpired(token)
	if err != nil {
		return Claims{}, err
	}
	if !t.now().Before(time.Unix(c.Expires, 0)) {
		return Claims{}, errBadToken
	}
	return c, nil
}

// parseExpired is Parse without the expiry: for a session that was opened
// while its token was valid. The issue time is checked against the clock
// every time, like the expiry: a token issued in the future (see
// IssuedAtSkew) verifies, but is refused until its time comes.
func (t *Tokens) parseExpired(token string) (Claims, error) {
	c, ok := t.verified.get(token)
	if !ok {
		var err error
		if c, err = t.verify(token); err != nil {
			return Claims{}, err
		}
		t.verified.put(token, c)
	}
	if latest := float64(t.now().Add(IssuedAtSkew).UnixMicro()) / 1e6; c.IssuedAt > latest {
		return Claims{}, errBadToken
	}
	return c, nil
}

// parser verifies a token's algorithm (HS256 and nothing else) and
// signature, and decodes its claims; the rules on the claims are checked
// here (verify, Parse, parseExpired), as before the library was used for it.
var parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
	jwt.WithStrictDecoding(), jwt.WithoutClaimsValidation())

// verify checks a token's algorithm and signature with the jwt package and
// decodes its claims. What the package does not check is checked here: the
// header asks for no extension (crit, RFC 7515); neither the header nor the
// claims repeat a member or spell one of ours in another case (see
// uniqueMembers, checked on the raw segments because the package parses
// with encoding/json, which keeps the last of repeated members); the claims
// name a user (a canonical id, see Claims.UserID, and a username) and carry
// an expiry and a non-negative issue time. It runs once per token: Parse
// remembers the claims of tokens that verified.
func (t *Tokens) verify(token string) (Claims, error) {
	var c Claims
	tok, err := parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil })
	if err != nil || !tok.Valid {
		return Claims{}, errBadToken
	}
	if _, crit := tok.Header["crit"]; crit {
		return Claims{}, errBadToken
	}
	header, rest, _ := strings.Cut(token, ".")
	payload, _, _ := strings.Cut(rest, ".")
	if !segmentMembersUnique(header, "alg", "crit") || !segmentMembersUnique(payload, "sub", "username", "iat", "exp") {
		return Claims{}, errBadToken
	}
	if c.Expires == 0 || c.IssuedAt < 0 {
		return Claims{}, errBadToken
	}
	if _, err := c.UserID(); err != nil || c.Username == "" {
		return Claims{}, errBadToken
	}
	return c, nil
}

// segmentMembersUnique reports whether a base64url token segment decodes to
// a JSON object that passes uniqueMembers with fields.
func segmentMembersUnique(segment string, fields ...string) bool {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(segment)
	return err == nil && uniqueMembers(raw, fields...)
}

// verifiedTokens remembers the claims of tokens whose signature verified.
type verifiedTokens struct {
	mu     sync.Mutex
	claims map[string]Claims // token → its claims
}

// maxVerified bounds the memory verifiedTokens keeps (a few MiB): past it,
// it starts again empty, and tokens still in use are verified once more.
const maxVerified = 10_000

func (v *verifiedTokens) get(token string) (Claims, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.claims[token]
	return c, ok
}

func (v *verifiedTokens) put(token string, c Claims) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.claims) >= maxVerified {
		clear(v.claims)
	}
	v.claims[token] = c
}

// uniqueMembers reports whether raw is one JSON object in which no object, at
// any depth, has two members whose names encoding/json could take for one
// (names equal ignoring case: it matches struct fields that way, and keeps
// the last), and whose own members spell each of the names in fields
// exactly when they match one ignoring case ("SUB" is not "sub" to RFC 7519,
// but encoding/json would read it as sub). A JWT whose header or claims name
// a member twice is refused (RFC 7515 section 4: parsers either refuse it or
// keep the last, and two parsers that differ on it disagree on what the token
// says); so is one whose names only encoding/json would read as ours.
func uniqueMembers(raw []byte, fields ...string) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	stack := [][]string{{}} // the names seen in each open object; nil for an array
	wantName := true
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		top := len(stack) - 1
		if wantName { // in an object, between members
			if tok == json.Delim('}') {
				stack = stack[:top]
				wantName = len(stack) > 0 && stack[len(stack)-1] != nil
				continue
			}
			name, _ := tok.(string) // the decoder allows nothing else here
			for _, seen := range stack[top] {
				if strings.EqualFold(seen, name) {
					return false
				}
			}
			if top == 0 {
				for _, f := range fields {
					if strings.EqualFold(f, name) && f != name {
						return false
					}
				}
			}
			stack[top] = append(stack[top], name)
			wantName = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, []string{})
			wantName = true
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim(']'):
			stack = stack[:top]
		}
		// A value ended: in an object, a name comes next.
		wantName = len(stack) > 0 && stack[len(stack)-1] != nil
	}
	_, err := dec.Token()
	return err == io.EOF // nothing after the object
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
