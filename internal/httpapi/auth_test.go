package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

type userBody struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Email     string `json:"email"`
	Role      string `json:"role"`
	IsActive  bool   `json:"is_active"`
	CreatedAt string `json:"created_at"`
}

type validationBody struct {
	Detail []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	} `json:"detail"`
}

// locs returns the locations of a 422 body as "body.email" strings.
func locs(t *testing.T, r *apitest.Response) []string {
	t.Helper()
	var v validationBody
	r.JSON(t, &v)
	var out []string
	for _, d := range v.Detail {
		parts := make([]string, len(d.Loc))
		for i, p := range d.Loc {
			parts[i] = strings.Trim(strings.ReplaceAll(strings.ReplaceAll(strconv.Quote(toString(p)), `"`, ""), " ", ""), "")
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.Itoa(int(x))
	}
	return ""
}

func register(e *apitest.Env, username, email, password string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register",
		Body: map[string]string{"username": username, "email": email, "password": password}})
}

func login(e *apitest.Env, username, password string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login",
		Body: map[string]string{"username": username, "password": password}})
}

func TestRegisterAndLogin(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		r := register(e, "alice", "Alice@TuxLab.org", "correct horse battery").Expect(t, http.StatusCreated)
		var u userBody
		r.JSON(t, &u)
		if u.Username != "alice" || u.Email != "alice@tuxlab.org" || u.Role != "student" || !u.IsActive || u.ID == 0 {
			t.Fatalf("registered user = %+v", u)
		}
		if strings.Contains(string(r.Body), "password") || strings.Contains(string(r.Body), "$2a$") {
			t.Fatalf("registration answer leaks the password or its hash: %s", r.Body)
		}

		r = login(e, "alice", "correct horse battery").Expect(t, http.StatusOK)
		var tok struct{ AccessToken, TokenType string }
		json.Unmarshal(r.Body, &struct {
			AccessToken *string `json:"access_token"`
			TokenType   *string `json:"token_type"`
		}{&tok.AccessToken, &tok.TokenType})
		if tok.TokenType != "bearer" || tok.AccessToken == "" {
			t.Fatalf("login answer = %s", r.Body)
		}
		claims := decodeClaims(t, tok.AccessToken)
		if claims["sub"] != strconv.FormatInt(u.ID, 10) || claims["username"] != "alice" {
			t.Fatalf("claims = %v", claims)
		}
		if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat < 480*60-1 || exp-iat > 480*60+1 {
			t.Fatalf("token lives %v s, want 480 minutes", exp-iat)
		}

		var me userBody
		e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusOK).JSON(t, &me)
		if me != u {
			t.Fatalf("me = %+v, want %+v", me, u)
		}
		// Usernames are case-insensitive at login.
		login(e, "ALICE", "correct horse battery").Expect(t, http.StatusOK)
	})
}

func decodeClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func TestRegisterConflicts(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("bob", auth.RoleStudent) // bob@tuxlab.org
		tests := []struct {
			name, username, email, detail string
		}{
			{"same username", "bob", "other@tuxlab.org", "Username already registered"},
			{"username in other case", "BOB", "other@tuxlab.org", "Username already registered"},
			{"same email", "robert", "bob@tuxlab.org", "Email already registered"},
			{"email in other case", "robert", "BOB@TUXLAB.ORG", "Email already registered"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := register(e, tt.username, tt.email, "long enough pw").Expect(t, http.StatusConflict)
				if r.Detail() != tt.detail {
					t.Fatalf("detail %q, want %q", r.Detail(), tt.detail)
				}
			})
		}
	})
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		tests := []struct {
			name string
			body any
			locs []string
		}{
			{"email .test", map[string]string{"username": "carol", "email": "carol@mail.test", "password": "long enough pw"}, []string{"body.email"}},
			{"email .invalid", map[string]string{"username": "carol", "email": "carol@x.invalid", "password": "long enough pw"}, []string{"body.email"}},
			{"email .localhost", map[string]string{"username": "carol", "email": "carol@box.localhost", "password": "long enough pw"}, []string{"body.email"}},
			{"email .local", map[string]string{"username": "carol", "email": "carol@printer.local", "password": "long enough pw"}, []string{"body.email"}},
			{"email example.com", map[string]string{"username": "carol", "email": "carol@example.com", "password": "long enough pw"}, []string{"body.email"}},
			{"email without domain dot", map[string]string{"username": "carol", "email": "carol@localhost", "password": "long enough pw"}, []string{"body.email"}},
			{"email without at", map[string]string{"username": "carol", "email": "carol.tuxlab.org", "password": "long enough pw"}, []string{"body.email"}},
			{"email with display name", map[string]string{"username": "carol", "email": "Carol <carol@tuxlab.org>", "password": "long enough pw"}, []string{"body.email"}},
			{"username too short", map[string]string{"username": "cj", "email": "cj@tuxlab.org", "password": "long enough pw"}, []string{"body.username"}},
			{"username with space", map[string]string{"username": "car ol", "email": "c@tuxlab.org", "password": "long enough pw"}, []string{"body.username"}},
			{"username starting with digit", map[string]string{"username": "1carol", "email": "c@tuxlab.org", "password": "long enough pw"}, []string{"body.username"}},
			{"password too short", map[string]string{"username": "carol", "email": "c@tuxlab.org", "password": "short"}, []string{"body.password"}},
			{"password over 72 bytes", map[string]string{"username": "carol", "email": "c@tuxlab.org", "password": strings.Repeat("x", 73)}, []string{"body.password"}},
			{"password equals username", map[string]string{"username": "carolina", "email": "c@tuxlab.org", "password": "Carolina"}, []string{"body.password"}},
			{"everything wrong at once", map[string]string{"username": "c", "email": "nope", "password": "x"}, []string{"body.username", "body.email", "body.password"}},
			{"missing fields", map[string]string{}, []string{"body.username", "body.email", "body.password"}},
			{"wrong type", map[string]any{"username": 42, "email": "c@tuxlab.org", "password": "long enough pw"}, []string{"body.username"}},
			{"malformed JSON", `{"username": "carol",`, []string{"body"}},
			{"JSON array", `[1,2]`, []string{"body"}},
			{"empty body", ``, []string{"body"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/register", Body: tt.body}).Expect(t, http.StatusUnprocessableEntity)
				if got := locs(t, r); strings.Join(got, ",") != strings.Join(tt.locs, ",") {
					t.Fatalf("locs %v, want %v (%s)", got, tt.locs, r.Body)
				}
			})
		}
		// Nothing was stored by any of them.
		if _, total, _ := e.App.Auth.ListUsers(context.Background(), "", auth.Page{Number: 1, Size: 10}); total != 0 {
			t.Fatalf("%d users stored after invalid registrations", total)
		}
	})
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("dave", auth.RoleStudent)
		wrong := login(e, "dave", "not the password").Expect(t, http.StatusUnauthorized)
		unknown := login(e, "nobody", apitest.Password).Expect(t, http.StatusUnauthorized)
		if string(wrong.Body) != string(unknown.Body) {
			t.Fatalf("unknown user %s and wrong password %s answer differently", unknown.Body, wrong.Body)
		}
		if wrong.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("401 without WWW-Authenticate: %v", wrong.Header)
		}
		// Deactivated: 403 with the right password, still 401 with a wrong one.
		e.App.Auth.SetActive(context.Background(), u.ID, false)
		if r := login(e, "dave", apitest.Password).Expect(t, http.StatusForbidden); r.Detail() != "User account is inactive" {
			t.Fatalf("detail %q", r.Detail())
		}
		login(e, "dave", "not the password").Expect(t, http.StatusUnauthorized)
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "dave"}}).Expect(t, http.StatusUnprocessableEntity)

		// bcrypt reads 72 bytes: the right 72 followed by anything is still wrong.
		long := strings.Repeat("k", 71) + "!"
		register(e, "erin", "erin@tuxlab.org", long).Expect(t, http.StatusCreated)
		login(e, "erin", long).Expect(t, http.StatusOK)
		login(e, "erin", long+"anything at all").Expect(t, http.StatusUnauthorized)
	})
}

func TestLoginRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("per username", func(t *testing.T) {
		apitest.Each(t, func(t *testing.T, e *apitest.Env) {
			e.CreateUser("erin", auth.RoleStudent)
			for range 3 {
				login(e, "erin", "wrong password!").Expect(t, http.StatusUnauthorized)
			}
			r := login(e, "erin", apitest.Password).Expect(t, http.StatusTooManyRequests)
			if n, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || n < 1 {
				t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
			}
			// Another username from the same client is not affected.
			login(e, "someone-else", "wrong password!").Expect(t, http.StatusUnauthorized)
		}, func(c *config.Config) { c.LoginPerUserPerMin = 3 })
	})
	t.Run("no lock-out from another address", func(t *testing.T) {
		apitest.Each(t, func(t *testing.T, e *apitest.Env) {
			e.CreateUser("gwen", auth.RoleStudent)
			from := func(addr, password string) *apitest.Response {
				return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "gwen", "password": password},
					Header: http.Header{"X-Forwarded-For": {addr}}})
			}
			from("203.0.113.66", "wrong password!").Expect(t, http.StatusUnauthorized)
			from("203.0.113.66", apitest.Password).Expect(t, http.StatusTooManyRequests)
			// The account's owner, elsewhere, still logs in.
			from("198.51.100.20", apitest.Password).Expect(t, http.StatusOK)
			// Many addresses together meet the account's slower ceiling (ten
			// times the per-address budget: 10 here, so 10 attempts in all).
			for i := range 14 { // a few more than the ceiling, for what refills meanwhile
				if r := from(fmt.Sprintf("192.0.2.%d", i+1), "wrong password!"); r.Status != http.StatusUnauthorized && r.Status != http.StatusTooManyRequests {
					t.Fatalf("attempt %d: %d", i, r.Status)
				}
			}
			from("198.51.100.21", apitest.Password).Expect(t, http.StatusTooManyRequests)
		}, func(c *config.Config) {
			c.LoginPerUserPerMin = 1
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		})
	})
	t.Run("per client IP, login and register together", func(t *testing.T) {
		apitest.Each(t, func(t *testing.T, e *apitest.Env) {
			login(e, "u1", "whatever-pass").Expect(t, http.StatusUnauthorized)
			login(e, "u2", "whatever-pass").Expect(t, http.StatusUnauthorized)
			r := register(e, "frank", "frank@tuxlab.org", "long enough pw").Expect(t, http.StatusTooManyRequests)
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			login(e, "u3", "whatever-pass").Expect(t, http.StatusTooManyRequests)
		}, func(c *config.Config) { c.AuthPerIPPerMinute = 2 })
	})
}

// forge signs claims with the test secret (or another key) and method.
func forge(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forgeRaw signs a header and claims written by hand with HS256 and key.
func forgeRaw(t *testing.T, key []byte, header, claims string) string {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	signing := b64([]byte(header)) + "." + b64([]byte(claims))
	sig, err := jwt.SigningMethodHS256.Sign(signing, key)
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64(sig)
}

func TestPerRequestChecks(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("grace", auth.RoleStudent)
		sub := strconv.FormatInt(u.ID, 10)
		now := time.Now()
		secret := []byte(apitest.Secret)
		tests := []struct {
			name   string
			header string
			status int
			detail string
		}{
			{"no header", "", 401, "Not authenticated"},
			{"not bearer", "Basic Z3JhY2U6cHc=", 401, "Not authenticated"},
			{"garbage", "Bearer not.a.token", 401, "Could not validate credentials"},
			{"other secret", "Bearer " + forge(t, jwt.SigningMethodHS256, []byte("another-secret-0123456789abcdef0123"), jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"alg none", "Bearer " + forge(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"HS512", "Bearer " + forge(t, jwt.SigningMethodHS512, secret, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"expired", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Add(-2 * time.Hour).Unix(), "exp": now.Add(-time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"no expiry", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Unix()}), 401, "Could not validate credentials"},
			{"unknown user id", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "999999", "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "User not found"},
			{"username claim of someone else", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub, "username": "mallory", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "User not found"},
			// Issued more than IssuedAtSkew (60 s) ahead; a spelling of the id other than its own; a member twice.
			{"issued in the future", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Add(auth.IssuedAtSkew + 5*time.Second).Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"issued within the skew", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub, "username": "grace", "iat": now.Add(auth.IssuedAtSkew / 2).Unix(), "exp": now.Add(time.Hour).Unix()}), 200, ""},
			{"sub with a leading zero", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "0" + sub, "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"sub with a plus", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "+" + sub, "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"sub with a space", "Bearer " + forge(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": sub + " ", "username": "grace", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}), 401, "Could not validate credentials"},
			{"sub twice", "Bearer " + forgeRaw(t, secret, `{"alg":"HS256","typ":"JWT"}`, fmt.Sprintf(`{"sub":"999999","username":"grace","iat":%d,"exp":%d,"sub":%q}`, now.Unix(), now.Add(time.Hour).Unix(), sub)), 401, "Could not validate credentials"},
			{"alg twice", "Bearer " + forgeRaw(t, secret, `{"alg":"none","alg":"HS256"}`, fmt.Sprintf(`{"sub":%q,"username":"grace","iat":%d,"exp":%d}`, sub, now.Unix(), now.Add(time.Hour).Unix())), 401, "Could not validate credentials"},
			{"claims in another order", "Bearer " + forgeRaw(t, secret, `{"alg":"HS256","typ":"JWT"}`, fmt.Sprintf(`{"exp":%d,"iat":%d,"username":"grace","sub":%q}`, now.Add(time.Hour).Unix(), now.Unix(), sub)), 200, ""},
			{"valid", "Bearer " + u.Token, 200, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: "GET", Path: "/api/auth/me", Header: http.Header{"Authorization": {tt.header}}}).Expect(t, tt.status)
				if r.Detail() != tt.detail {
					t.Fatalf("detail %q, want %q", r.Detail(), tt.detail)
				}
				if tt.status == 401 && r.Header.Get("WWW-Authenticate") != "Bearer" {
					t.Fatal("401 without WWW-Authenticate: Bearer")
				}
			})
		}
	})
}

func TestAccountChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		ctx := context.Background()
		root := e.CreateUser("root", auth.RoleAdmin)
		u := e.CreateUser("heidi", auth.RoleStudent)

		// A role change applies to the token already issued.
		e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusForbidden)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + strconv.FormatInt(u.ID, 10) + "/role?role=admin", Token: root.Token}).Expect(t, 200)
		e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusOK)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + strconv.FormatInt(u.ID, 10) + "/role?role=student", Token: root.Token}).Expect(t, 200)
		if r := e.Get("/api/admin/stats", u.Token).Expect(t, http.StatusForbidden); r.Detail() != "Admin access required" {
			t.Fatalf("detail %q", r.Detail())
		}

		// Deactivation: 403 on every route, reactivation restores.
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + strconv.FormatInt(u.ID, 10) + "/active?is_active=false", Token: root.Token}).Expect(t, 200)
		if r := e.Get("/api/auth/me", u.Token).Expect(t, http.StatusForbidden); r.Detail() != "User account is inactive" {
			t.Fatalf("detail %q", r.Detail())
		}
		e.Do(apitest.Request{Method: "PUT", Path: "/api/admin/users/" + strconv.FormatInt(u.ID, 10) + "/active?is_active=true", Token: root.Token}).Expect(t, 200)
		e.Get("/api/auth/me", u.Token).Expect(t, http.StatusOK)

		// A password change kills older tokens, not newer ones.
		if err := e.App.Auth.ChangePassword(ctx, u.ID, "a brand new password"); err != nil {
			t.Fatal(err)
		}
		e.Get("/api/auth/me", u.Token).Expect(t, http.StatusUnauthorized)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		login(e, "heidi", "a brand new password").Expect(t, 200).JSON(t, &tok)
		e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusOK)

		// Deletion: 401 User not found; a new account with the same name does not inherit the token.
		e.Do(apitest.Request{Method: "DELETE", Path: "/api/admin/users/" + strconv.FormatInt(u.ID, 10), Token: root.Token}).Expect(t, 200)
		if r := e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusUnauthorized); r.Detail() != "User not found" {
			t.Fatalf("detail %q", r.Detail())
		}
		e.CreateUser("heidi", auth.RoleStudent)
		e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusUnauthorized)
	})
}

func TestConcurrentRegistrationOfOneName(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		const n = 4
		var reqs []apitest.Request
		for i := range n {
			reqs = append(reqs, apitest.Request{Method: "POST", Path: "/api/auth/register", Body: map[string]string{
				"username": "ivan", "email": "ivan" + strconv.Itoa(i) + "@tuxlab.org", "password": "long enough pw"}})
		}
		statuses := statusesOf(e.DoConcurrently(reqs))
		created := 0
		for _, s := range statuses {
			switch s {
			case 201:
				created++
			case 409:
			default:
				t.Fatalf("status %d in %v", s, statuses)
			}
		}
		if created != 1 {
			t.Fatalf("%d registrations of one name succeeded: %v", created, statuses)
		}
	})
}

// TestLogoutRevokesTheToken: after logout the token (and any older one) is
// refused, on both databases; a new login works.
func TestLogoutRevokesTheToken(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("frank", auth.RoleStudent)
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		login(e, "frank", apitest.Password).Expect(t, http.StatusOK).JSON(t, &tok)
		e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusOK)
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: tok.AccessToken}).Expect(t, http.StatusOK)
		for _, old := range []string{tok.AccessToken, u.Token} {
			if r := e.Get("/api/auth/me", old).Expect(t, http.StatusUnauthorized); r.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Fatalf("401 without WWW-Authenticate")
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: "/api/auth/logout", Token: tok.AccessToken}).Expect(t, http.StatusUnauthorized)
		login(e, "frank", apitest.Password).Expect(t, http.StatusOK).JSON(t, &tok)
		e.Get("/api/auth/me", tok.AccessToken).Expect(t, http.StatusOK)
	})
}
