package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"math"
	"slices"
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
	macs     sync.Pool // *mac keyed with secret, reset before use
	verified verifiedTokens
}

// NewTokens returns a token issuer signing with secret; tokens live for ttl.
// now is the clock (nil for time.Now).
func NewTokens(secret []byte, ttl time.Duration, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	t := &Tokens{secret: secret, ttl: ttl, now: now, verified: verifiedTokens{claims: map[string]Claims{}}}
	t.macs.New = func() any { return &mac{h: hmac.New(sha256.New, t.secret)} }
	return t
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

// verify checks a token's algorithm and signature and decodes its claims.
// It does the little HS256 needs by hand instead of through the jwt
// package's general parser (a third of a request's token and user checks
// went to its reflection and allocations): the header must name HS256, the
// signature must match before any claim is read, the claims must name a
// user (a canonical id, see Claims.UserID) and carry an expiry and a
// non-negative issue time. Neither the header nor the claims may repeat a
// member (see uniqueMembers).
func (t *Tokens) verify(token string) (Claims, error) {
	header, rest, ok := strings.Cut(token, ".")
	if !ok {
		return Claims{}, errBadToken
	}
	payload, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return Claims{}, errBadToken
	}
	if header != hs256Header && !isHS256Header(header) {
		return Claims{}, errBadToken
	}
	m := t.macs.Get().(*mac)
	defer m.release(&t.macs)
	if !m.valid(token[:len(header)+1+len(payload)], sig) {
		return Claims{}, errBadToken
	}
	raw, err := m.decode(payload)
	if err != nil {
		return Claims{}, errBadToken
	}
	c, err := decodeClaims(raw)
	if err != nil {
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

// decodeClaims decodes a token's claims. Issue writes them in one shape,
// {"sub":"7","username":"kim","iat":1767268800.123456,"exp":1767272400},
// which is read by hand: encoding/json's reflection took half of Parse.
// Anything else, any order, escape or number syntax, goes to encoding/json,
// and whatever the fast path accepts, encoding/json reads the same way
// (FuzzDecodeClaims checks it).
func decodeClaims(raw []byte) (Claims, error) {
	if c, ok := decodeIssuedClaims(string(raw)); ok {
		return c, nil // that shape names each member once
	}
	var c Claims
	if !uniqueMembers(raw, "sub", "username", "iat", "exp") {
		return c, errBadToken
	}
	err := json.Unmarshal(raw, &c)
	return c, err
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

// decodeIssuedClaims reads claims in exactly the shape Issue writes them,
// or reports false.
func decodeIssuedClaims(s string) (Claims, bool) {
	var (
		c        Claims
		iat, exp string
		ok       bool
	)
	if s, ok = strings.CutPrefix(s, `{"sub":"`); !ok {
		return c, false
	}
	if c.Subject, s, ok = cutPlain(s, `","username":"`); !ok {
		return c, false
	}
	if c.Username, s, ok = cutPlain(s, `","iat":`); !ok {
		return c, false
	}
	if iat, s, ok = strings.Cut(s, `,"exp":`); !ok || !isDecimal(iat, true) {
		return c, false
	}
	if exp, ok = strings.CutSuffix(s, "}"); !ok || !isDecimal(exp, false) {
		return c, false
	}
	var err1, err2 error
	c.IssuedAt, err1 = strconv.ParseFloat(iat, 64)
	c.Expires, err2 = strconv.ParseInt(exp, 10, 64)
	return c, err1 == nil && err2 == nil
}

// cutPlain cuts s at sep and reports whether what comes before is a JSON
// string body that needs no decoding: printable ASCII without quote or backslash.
func cutPlain(s, sep string) (before, after string, ok bool) {
	before, after, ok = strings.Cut(s, sep)
	if !ok {
		return "", "", false
	}
	for i := 0; i < len(before); i++ {
		if b := before[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
			return "", "", false
		}
	}
	return before, after, true
}

// isDecimal reports whether s is a JSON number made of digits only, with a
// fraction when fraction allows it: no sign, exponent or leading zero.
func isDecimal(s string, fraction bool) bool {
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && (!fraction || !allDigits(frac)) {
		return false
	}
	return allDigits(whole) && (whole == "0" || whole[0] != '0')
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// strictB64 is the base64url of JWS (RFC 7515, no padding), refusing
// non-zero trailing bits so that one token has exactly one spelling.
var strictB64 = base64.RawURLEncoding.Strict()

// hs256Header is the header segment Issue writes; any other must be decoded.
var hs256Header = func() string {
	tok, err := jwt.New(jwt.SigningMethodHS256).SigningString()
	if err != nil {
		panic(err)
	}
	header, _, _ := strings.Cut(tok, ".")
	return header
}()

// isHS256Header reports whether a header segment decodes to a JSON object
// whose alg is HS256 and that asks for no extension (crit), as RFC 7515 requires.
func isHS256Header(segment string) bool {
	raw, err := strictB64.DecodeString(segment)
	if err != nil {
		return false
	}
	var h struct {
		Alg  string          `json:"alg"`
		Crit json.RawMessage `json:"crit"`
	}
	return uniqueMembers(raw, "alg", "crit") && json.Unmarshal(raw, &h) == nil && h.Alg == jwt.SigningMethodHS256.Alg() && h.Crit == nil
}

// mac is an HMAC-SHA256 keyed with the secret, and buffers that let Parse
// hand it and the base64 decoder a token's parts without converting
// strings, which would allocate on every request.
type mac struct {
	h       hash.Hash
	in, out []byte
}

// valid reports whether sig is the base64url HMAC-SHA256 of signed.
func (m *mac) valid(signed, sig string) bool {
	var want [sha256.Size]byte
	got, err := m.decode(sig)
	if err != nil || len(got) != len(want) {
		return false
	}
	m.in = append(m.in[:0], signed...)
	m.h.Reset()
	m.h.Write(m.in)
	m.h.Sum(want[:0])
	return hmac.Equal(want[:], got)
}

// decode returns the bytes segment encodes, valid until the next call.
func (m *mac) decode(segment string) ([]byte, error) {
	m.in = append(m.in[:0], segment...)
	m.out = slices.Grow(m.out[:0], strictB64.DecodedLen(len(m.in)))
	n, err := strictB64.Decode(m.out[:cap(m.out)], m.in)
	return m.out[:n], err
}

// release returns m to pool, without buffers grown large by a huge token.
func (m *mac) release(pool *sync.Pool) {
	if cap(m.in) > 4<<10 || cap(m.out) > 4<<10 {
		m.in, m.out = nil, nil
	}
	pool.Put(m)
}
