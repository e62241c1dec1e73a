package auth

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
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

// tokenCase is a token and whether Parse accepts it; libDiffers says why the
// jwt package (parsing into a map, with the same algorithm, expiry and
// issue-time rules) decides otherwise, "" when it agrees.
type tokenCase struct {
	name       string
	token      string
	accept     bool
	libDiffers string
}

// tokenCases covers the rules on the issue time, the subject and repeated
// members, with their neighbours that pass.
func tokenCases(t *testing.T, now time.Time, key []byte) []tokenCase {
	claims := func(sub any, iat any) jwt.MapClaims {
		return jwt.MapClaims{"sub": sub, "username": "kim", "iat": iat, "exp": now.Add(time.Hour).Unix()}
	}
	sign := func(c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	b64 := base64.RawURLEncoding.EncodeToString
	header := b64([]byte(`{"alg":"HS256","typ":"JWT"}`))
	raw := func(payload string) string { return signRaw(t, key, header, b64([]byte(payload))) }
	rawHeader := func(h string) string {
		return signRaw(t, key, b64([]byte(h)), b64([]byte(`{"sub":"7","username":"kim","iat":1,"exp":9999999999}`)))
	}
	exp := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	iat := strconv.FormatInt(now.Unix(), 10)
	const dup = "the library keeps the last of repeated members"
	const fold = "the library reads member names exactly; encoding/json would read this one as ours"
	const canon = "the library does not read the subject"
	return []tokenCase{
		{"iat now", sign(claims("7", now.Unix())), true, ""},
		{"iat within the skew", sign(claims("7", now.Add(IssuedAtSkew).Unix())), true, ""},
		{"iat a minute and a second ahead", sign(claims("7", now.Add(IssuedAtSkew+time.Second).Unix())), false, ""},
		{"iat a day ahead", sign(claims("7", now.Add(24*time.Hour).Unix())), false, ""},
		{"iat fractional, ahead", sign(claims("7", float64(now.Add(IssuedAtSkew+2*time.Second).UnixMilli())/1e3+0.25)), false, ""},
		{"iat negative", sign(claims("7", -1)), false, "the library accepts an issue time before 1970"},
		{"sub largest id", sign(claims("9223372036854775807", now.Unix())), true, ""},
		{"sub leading zero", sign(claims("07", now.Unix())), false, canon},
		{"sub zero", sign(claims("0", now.Unix())), false, canon},
		{"sub plus", sign(claims("+7", now.Unix())), false, canon},
		{"sub minus", sign(claims("-7", now.Unix())), false, canon},
		{"sub space before", sign(claims(" 7", now.Unix())), false, canon},
		{"sub space after", sign(claims("7 ", now.Unix())), false, canon},
		{"sub exponent", sign(claims("7e0", now.Unix())), false, canon},
		{"sub fraction", sign(claims("7.0", now.Unix())), false, canon},
		{"sub past int64", sign(claims("9223372036854775808", now.Unix())), false, canon},
		{"sub empty", sign(claims("", now.Unix())), false, canon},
		{"sub a number", sign(claims(7, now.Unix())), false, "the library does not read the subject unless asked to"},
		{"claims in another order", raw(`{"exp":` + exp + `,"iat":` + iat + `,"username":"kim","sub":"7"}`), true, ""},
		{"sub twice", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `,"sub":"8"}`), false, dup},
		{"exp twice", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":1,"exp":` + exp + `}`), false, dup},
		{"username twice", raw(`{"sub":"7","username":"kim","username":"root","iat":` + iat + `,"exp":` + exp + `}`), false, dup},
		{"sub twice, once escaped", raw(`{"sub":"7","s\u0075b":"8","username":"kim","iat":` + iat + `,"exp":` + exp + `}`), false, dup},
		{"another member twice", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `,"x":1,"x":2}`), false, dup},
		{"a member twice in a nested object", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `,"x":[{"a":1,"a":2}]}`), false, "the library keeps the last of repeated members, at any depth"},
		{"nested objects apart", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `,"x":[{"a":1},{"a":2}],"y":{"a":{"a":1}}}`), true, ""},
		{"sub and SUB", raw(`{"sub":"7","SUB":"8","username":"kim","iat":` + iat + `,"exp":` + exp + `}`), false, fold},
		{"SUB alone", raw(`{"SUB":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `}`), false, fold},
		{"Exp instead of exp", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"Exp":` + exp + `}`), false, ""},
		{"claims then more JSON", raw(`{"sub":"7","username":"kim","iat":` + iat + `,"exp":` + exp + `}{}`), false, ""},
		{"header alg twice", rawHeader(`{"alg":"HS256","alg":"HS256"}`), false, dup},
		{"header alg none then HS256", rawHeader(`{"alg":"none","alg":"HS256"}`), false, dup},
		{"header ALG", rawHeader(`{"ALG":"HS256"}`), false, ""},
		{"header alg and ALG", rawHeader(`{"alg":"HS256","ALG":"none"}`), false, fold},
		{"header typ twice", rawHeader(`{"alg":"HS256","typ":"JWT","typ":"JWT"}`), false, dup},
		{"header with another member", rawHeader(`{"typ":"JWT","alg":"HS256","kid":"k1"}`), true, ""},
	}
}

// TestParseIssueTimeSubjectAndRepeatedMembers checks each rule with its
// neighbours that pass.
func TestParseIssueTimeSubjectAndRepeatedMembers(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key := []byte("0123456789abcdef0123456789abcdef")
	tk := NewTokens(key, time.Hour, func() time.Time { return now })
	for _, tc := range tokenCases(t, now, key) {
		c, err := tk.Parse(tc.token)
		if (err == nil) != tc.accept {
			t.Errorf("%s: accepted %v (claims %+v), want %v", tc.name, err == nil, c, tc.accept)
		}
		if _, err := tk.parseExpired(tc.token); (err == nil) != tc.accept {
			t.Errorf("%s: parseExpired accepted %v, want %v", tc.name, err == nil, tc.accept)
		}
	}
	// A token issued ahead verifies, and is accepted once its time comes.
	ahead, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "7", "username": "kim",
		"iat": now.Add(24 * time.Hour).Unix(), "exp": now.Add(48 * time.Hour).Unix()}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Parse(ahead); err == nil {
		t.Fatal("a token issued a day ahead was accepted")
	}
	now = now.Add(24*time.Hour - IssuedAtSkew)
	if _, err := tk.Parse(ahead); err != nil {
		t.Fatalf("a token issued a day ahead is still refused a day later: %v", err)
	}
}

// TestParseAgreesWithJWT runs every case through the jwt package's own
// parser, with HS256 only, a required expiry and the issue time checked with
// IssuedAtSkew of leeway: wherever it has a rule, it decides as Parse does,
// and where it decides otherwise the case says why.
func TestParseAgreesWithJWT(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	key := []byte("0123456789abcdef0123456789abcdef")
	tk := NewTokens(key, time.Hour, func() time.Time { return now })
	p := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(IssuedAtSkew), jwt.WithTimeFunc(func() time.Time { return now }))
	good, err := tk.Issue(&User{ID: 7, Username: "kim"})
	if err != nil {
		t.Fatal(err)
	}
	cases := append(tokenCases(t, now, key), tokenCase{"as Issue writes it", good, true, ""})
	for _, tc := range cases {
		_, err := tk.Parse(tc.token)
		_, libErr := p.Parse(tc.token, func(*jwt.Token) (any, error) { return key, nil })
		ours, lib := err == nil, libErr == nil
		switch {
		case ours != tc.accept:
			t.Errorf("%s: Parse accepted %v, want %v", tc.name, ours, tc.accept)
		case tc.libDiffers == "" && lib != ours:
			t.Errorf("%s: jwt accepted %v (%v), Parse %v", tc.name, lib, libErr, ours)
		case tc.libDiffers != "" && lib == ours:
			t.Errorf("%s: jwt now agrees (accepted %v), though the case says %q", tc.name, lib, tc.libDiffers)
		}
	}
}

// FuzzUniqueMembers checks that whatever uniqueMembers accepts is one JSON
// object that encoding/json reads, with as many members as names it saw.
func FuzzUniqueMembers(f *testing.F) {
	for _, s := range []string{
		`{"sub":"7","username":"kim","iat":1,"exp":2}`, `{"a":{"a":[{"a":1},{"a":2}]}}`, `{"a":1,"A":2}`,
		`{"s\u0075b":1,"sub":2}`, `{}`, `{"a":1}{}`, `[{"a":1}]`, `{"a":[1,{"b":2,"b":3}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !uniqueMembers([]byte(s)) {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%q: accepted, but encoding/json refuses it: %v", s, err)
		}
		seen := map[string]bool{}
		for k := range m {
			if seen[strings.ToLower(k)] {
				t.Fatalf("%q: accepted with names equal ignoring case", s)
			}
			seen[strings.ToLower(k)] = true
		}
	})
}
