package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// csrfLabel separates the CSRF proof's HMAC from every other use of the
// secret: a proof can never be taken for a token signature, nor one for it.
const csrfLabel = "tuxlab csrf proof\x00"

// CSRFProof returns the proof a browser sends (X-CSRF-Token) with an unsafe
// request authenticated by the session cookie that carries token: an HMAC of
// the token under the server's secret. Another site can neither read the
// proof (it is handed out in a cookie only this site's pages can read) nor
// compute it (it has no secret), so a forged request cannot carry it. The
// proof changes with every token, so a new sign-in or password change
// retires the old one.
func (t *Tokens) CSRFProof(token string) string {
	m := hmac.New(sha256.New, t.secret)
	m.Write([]byte(csrfLabel))
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRFProof reports whether proof is token's, in constant time.
func (t *Tokens) CheckCSRFProof(token, proof string) bool {
	return proof != "" && hmac.Equal([]byte(proof), []byte(t.CSRFProof(token)))
}

// CSRFProof returns the CSRF proof of a session token (see Tokens.CSRFProof).
func (s *Service) CSRFProof(token string) string { return s.tokens.CSRFProof(token) }

// CheckCSRFProof reports whether proof is the CSRF proof of token.
func (s *Service) CheckCSRFProof(token, proof string) bool {
	return s.tokens.CheckCSRFProof(token, proof)
}

// TokenTTL is how long an access token lives: a session cookie lives as long.
func (s *Service) TokenTTL() time.Duration { return s.tokens.ttl }
