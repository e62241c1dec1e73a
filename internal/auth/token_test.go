package auth

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestParseRefuses walks the ways a token can be wrong and checks that Parse
// refuses each, while the jwt package's own tokens (any header spelling of
// HS256) verify.
func TestParseRefuses(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key := []byte("0123456789abcdef0123456789abcdef")
	tk := NewTokens(key, time.Hour, func() time.Time { return now })
	good, err := tk.Issue(&User{ID: 7, Username: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{"sub": "7", "username": "kim", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	sign := func(m jwt.SigningMethod, k any, c jwt.MapClaims, header map[string]any) string {
		tok := jwt.NewWithClaims(m, c)
		for name, v := range header {
			tok.Header[name] = v
		}
		s, err := tok.SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with := func(edit func(c jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range claims {
			c[k] = v
		}
		edit(c)
		return c
	}
	header, payload, sig := split3(good)
	_, _, otherSig := split3(sign(jwt.SigningMethodHS256, []byte("another-key-another-key-another-k"), claims, nil))
	b64 := base64.RawURLEncoding.EncodeToString

	for _, tok := range []string{
		good,
		sign(jwt.SigningMethodHS256, key, claims, nil),
		sign(jwt.SigningMethodHS256, key, claims, map[string]any{"typ": nil}),   // no typ
		sign(jwt.SigningMethodHS256, key, claims, map[string]any{"kid": "one"}), // another header
	} {
		if c, err := tk.Parse(tok); err != nil || c.Subject != "7" || c.Username != "kim" {
			t.Errorf("valid %q: %+v, %v", tok, c, err)
		}
	}

	for name, tok := range map[string]string{
		"empty":              "",
		"one segment":        header,
		"two segments":       header + "." + payload,
		"four segments":      good + ".x",
		"signature of other": header + "." + payload + "." + otherSig,
		"payload changed":    header + "." + b64([]byte(`{"sub":"1","username":"kim","iat":1,"exp":9999999999}`)) + "." + sig,
		"signature cut":      header + "." + payload + "." + sig[:len(sig)-1],
		"signature padded":   good + "=",
		"signature bits":     header + "." + payload + "." + sig[:len(sig)-1] + flipLowBits(sig[len(sig)-1]),
		"alg none":           sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims, nil),
		"HS384":              sign(jwt.SigningMethodHS384, key, claims, nil),
		"HS512":              sign(jwt.SigningMethodHS512, key, claims, nil),
		"header says HS512":  b64([]byte(`{"alg":"HS512","typ":"JWT"}`)) + "." + payload + "." + sig,
		"crit header":        sign(jwt.SigningMethodHS256, key, claims, map[string]any{"crit": []string{"exp"}}),
		"header not JSON":    b64([]byte(`alg=HS256`)) + "." + payload + "." + sig,
		"expired":            sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { c["exp"] = now.Unix() }), nil),
		"no expiry":          sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { delete(c, "exp") }), nil),
		"expiry a string":    sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { c["exp"] = "9999999999" }), nil),
		"subject a number":   sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { c["sub"] = 7 }), nil),
		"subject not an id":  sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { c["sub"] = "kim" }), nil),
		"no username":        sign(jwt.SigningMethodHS256, key, with(func(c jwt.MapClaims) { delete(c, "username") }), nil),
		"payload not JSON":   signRaw(t, key, header, b64([]byte(`not json`))),
	} {
		if c, err := tk.Parse(tok); err == nil {
			t.Errorf("%s: accepted, claims %+v", name, c)
		}
	}
}

// split3 returns a token's three segments.
func split3(tok string) (header, payload, sig string) {
	parts := strings.SplitN(tok, ".", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// flipLowBits returns the base64url digit c with its two lowest bits changed:
// in the last digit of a 32-byte signature those bits carry nothing.
func flipLowBits(c byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, c)
	return string(alphabet[i^1])
}

// signRaw signs header.payload with HS256, whatever the payload holds.
func signRaw(t *testing.T, key []byte, header, payload string) string {
	sig, err := jwt.SigningMethodHS256.Sign(header+"."+payload, key)
	if err != nil {
		t.Fatal(err)
	}
	return header + "." + payload + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// BenchmarkParse measures the check every authenticated request makes, for
// a client that sends the same token each time; BenchmarkVerify the first
// check of a token.
func BenchmarkParse(b *testing.B) { benchToken(b, (*Tokens).Parse) }

func BenchmarkVerify(b *testing.B) { benchToken(b, (*Tokens).verify) }

func benchToken(b *testing.B, check func(*Tokens, string) (Claims, error)) {
	tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour, nil)
	tok, err := tk.Issue(&User{ID: 7, Username: "kim"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := check(tk, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRememberedTokensExpire checks that a token verified once is still
// refused once it expires, and that the memory of verified tokens stays bounded.
func TestRememberedTokensExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Minute, func() time.Time { return now })
	var tokens []string
	for id := range int64(maxVerified + 5) {
		tok, err := tk.Issue(&User{ID: id + 1, Username: "kim"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Parse(tok); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	if n := len(tk.verified.claims); n > maxVerified {
		t.Fatalf("%d tokens remembered", n)
	}
	now = now.Add(time.Minute)
	for _, tok := range []string{tokens[0], tokens[len(tokens)-1]} {
		if _, err := tk.Parse(tok); err == nil {
			t.Fatal("an expired token was accepted from memory")
		}
	}
}

// TestIssuedClaimsTakeTheFastPath checks that what Issue writes is read by
// hand, and that other shapes still decode through encoding/json.
func TestIssuedClaimsTakeTheFastPath(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 123456000, time.UTC)
	for _, at := range []time.Time{now, now.Truncate(time.Second), time.Unix(0, 0)} {
		tk := NewTokens([]byte("0123456789abcdef0123456789abcdef"), time.Hour, func() time.Time { return at })
		tok, err := tk.Issue(&User{ID: 42, Username: "Kim.o_k-9"})
		if err != nil {
			t.Fatal(err)
		}
		_, payload, _ := split3(tok)
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := decodeIssuedClaims(string(raw))
		if !ok || c.Subject != "42" || c.Username != "Kim.o_k-9" || !c.Issued().Equal(at) || c.Expires != at.Add(time.Hour).Unix() {
			t.Errorf("%s: fast path %v, claims %+v", raw, ok, c)
		}
	}
	for _, raw := range []string{
		`{"exp":1767272400,"iat":1767268800.5,"username":"kim","sub":"7"}`,
		`{"sub":"7","username":"k\u0069m","iat":1767268800.5,"exp":1767272400}`,
		`{"sub":"7","username":"kim","iat":1.7672688005e9,"exp":1767272400}`,
		`{"sub":"7", "username":"kim","iat":1767268800.5,"exp":1767272400}`,
	} {
		if _, ok := decodeIssuedClaims(raw); ok {
			t.Errorf("%s took the fast path", raw)
		}
		c, err := decodeClaims([]byte(raw))
		if err != nil || c.Subject != "7" || c.Username != "kim" || c.IssuedAt != 1767268800.5 || c.Expires != 1767272400 {
			t.Errorf("%s: %+v, %v", raw, c, err)
		}
	}
}

// FuzzDecodeClaims checks that whatever the hand-written reader accepts,
// encoding/json accepts too and reads the same claims.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"sub":"7","username":"kim","iat":1767268800.123456,"exp":1767272400}`,
		`{"sub":"","username":"","iat":0,"exp":0}`,
		`{"sub":"7","username":"kim","iat":01,"exp":1}`,
		`{"sub":"7","username":"kim","iat":1.,"exp":99999999999999999999}`,
		`{"sub":"7","username":"k\"m","iat":1,"exp":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fast, ok := decodeIssuedClaims(s)
		if !ok {
			return
		}
		var slow Claims
		if err := json.Unmarshal([]byte(s), &slow); err != nil {
			t.Fatalf("%q: the fast path accepts what encoding/json refuses (%v)", s, err)
		}
		if fast != slow {
			t.Fatalf("%q: fast %+v, encoding/json %+v", s, fast, slow)
		}
	})
}
