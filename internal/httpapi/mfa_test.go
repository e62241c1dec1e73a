package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// advance moves a pinned clock on by d.
func advance(c *pinnedClock, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type mfaSetupBody struct {
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauth_uri"`
	QRCode     string `json:"qr_code"`
}

type recoveryBody struct {
	RecoveryCodes []string `json:"recovery_codes"`
}

type meBody struct {
	Username         string `json:"username"`
	MFAEnabled       bool   `json:"mfa_enabled"`
	MFASetupRequired bool   `json:"mfa_setup_required"`
}

// mfaEnv is a server whose two-factor codes are checked against clock.
func mfaEnv(t *testing.T, eng store.Engine, clock *pinnedClock, opts ...apitest.Option) *apitest.Env {
	t.Helper()
	return apitest.New(t, eng, append([]apitest.Option{func(c *config.Config) { c.TOTPNow = clock.Now }}, opts...)...)
}

// code is the TOTP code of secret at the clock's time, as an authenticator app computes it.
func code(t *testing.T, secret string, clock *pinnedClock) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mfaSetup(e *apitest.Env, token string) mfaSetupBody {
	e.T.Helper()
	var s mfaSetupBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/setup", Token: token}).Expect(e.T, 200).JSON(e.T, &s)
	return s
}

func mfaEnable(e *apitest.Env, token, code string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/enable", Token: token, Body: map[string]string{"code": code}})
}

func loginOTP(e *apitest.Env, username, password, otp string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login",
		Body: map[string]string{"username": username, "password": password, "otp": otp}})
}

// turnOnMFA sets up and enables two-factor sign-in for u and returns its
// secret and recovery codes; the clock then moves to the next time step, so
// the code enable used is not the current one any more.
func turnOnMFA(t *testing.T, e *apitest.Env, u *apitest.User, clock *pinnedClock) (string, []string) {
	t.Helper()
	s := mfaSetup(e, u.Token)
	var rec recoveryBody
	mfaEnable(e, u.Token, code(t, s.Secret, clock)).Expect(t, 200).JSON(t, &rec)
	advance(clock, 30*time.Second)
	return s.Secret, rec.RecoveryCodes
}

// TestMFASetupEnableAndLogin walks two-factor sign-in from setup to a
// login with a code and a recovery code, and checks each code works once.
func TestMFASetupEnableAndLogin(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			e := mfaEnv(t, eng, clock)
			mia := e.CreateUser("mia", auth.RoleStudent)

			var me meBody
			e.Get("/api/auth/me", mia.Token).Expect(t, 200).JSON(t, &me)
			if me.MFAEnabled || me.MFASetupRequired {
				t.Fatalf("a new user: %+v", me)
			}
			loginOTP(e, "mia", apitest.Password, "").Expect(t, 200) // off: no code needed
			mfaEnable(e, mia.Token, "123456").Expect(t, 409)        // nothing set up yet

			first := mfaSetup(e, mia.Token)
			if !strings.HasPrefix(first.OTPAuthURI, "otpauth://totp/tuxlab:mia?") || !strings.Contains(first.OTPAuthURI, "secret="+first.Secret) {
				t.Errorf("otpauth_uri %q", first.OTPAuthURI)
			}
			pngData, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(first.QRCode, "data:image/png;base64,"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(bytes.NewReader(pngData)); err != nil {
				t.Errorf("qr_code is not a PNG: %v", err)
			}
			// A second setup replaces the pending secret: the first one's code no longer enables.
			second := mfaSetup(e, mia.Token)
			if second.Secret == first.Secret {
				t.Fatal("a second setup returned the same secret")
			}
			if r := mfaEnable(e, mia.Token, code(t, first.Secret, clock)); r.Status != 422 || !strings.Contains(string(r.Body), `"code"`) {
				t.Fatalf("the replaced secret's code: %d %s", r.Status, r.Body)
			}
			mfaEnable(e, mia.Token, "not a code").Expect(t, 422)
			if got := locs(t, mfaEnable(e, mia.Token, strings.Repeat("1", 65)).Expect(t, 422)); strings.Join(got, ",") != "body.code" {
				t.Errorf("a 65-character code at %v", got)
			}
			e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/enable", Token: mia.Token, Body: map[string]any{}}).Expect(t, 422)
			enableCode := code(t, second.Secret, clock)
			var rec recoveryBody
			mfaEnable(e, mia.Token, enableCode).Expect(t, 200).JSON(t, &rec)
			if len(rec.RecoveryCodes) != 10 {
				t.Fatalf("%d recovery codes, want 10", len(rec.RecoveryCodes))
			}
			e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/setup", Token: mia.Token}).Expect(t, 409)
			mfaEnable(e, mia.Token, enableCode).Expect(t, 409)

			e.Get("/api/auth/me", mia.Token).Expect(t, 200).JSON(t, &me)
			if !me.MFAEnabled {
				t.Fatal("me does not say two-factor sign-in is on")
			}

			// The right password alone gives no token; the detail says a code is needed.
			r := loginOTP(e, "mia", apitest.Password, "").Expect(t, 401)
			if r.Detail() != "Two-factor code required" || strings.Contains(string(r.Body), "access_token") {
				t.Fatalf("login without a code: %s", r.Body)
			}
			e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login",
				Body: map[string]string{"username": "mia", "password": apitest.Password}}).Expect(t, 401)
			if got := locs(t, loginOTP(e, "mia", apitest.Password, strings.Repeat("1", 65)).Expect(t, 422)); strings.Join(got, ",") != "body.otp" {
				t.Errorf("a 65-character otp at %v", got)
			}
			// The code that enabled it was used: it does not sign in.
			if r := loginOTP(e, "mia", apitest.Password, enableCode); r.Status != 401 || r.Detail() != "Incorrect two-factor code" {
				t.Fatalf("the enable code replayed at login: %d %s", r.Status, r.Body)
			}
			advance(clock, 30*time.Second)
			now := code(t, second.Secret, clock)
			// A wrong password with a good code is the plain wrong-password answer, and uses nothing.
			if r := loginOTP(e, "mia", "a wrong password", now); r.Detail() != "Incorrect username or password" {
				t.Fatalf("wrong password: %d %s", r.Status, r.Body)
			}
			wrong := fmt.Sprintf("%06d", (atoi(now)+1)%1_000_000)
			if r := loginOTP(e, "mia", apitest.Password, wrong); r.Status != 401 || r.Detail() != "Incorrect two-factor code" {
				t.Fatalf("wrong code: %d %s", r.Status, r.Body)
			}
			var tok tokenBody
			loginOTP(e, "mia", apitest.Password, now).Expect(t, 200).JSON(t, &tok)
			e.Get("/api/auth/me", tok.AccessToken).Expect(t, 200)
			// The same code again: refused, even within its 30 seconds.
			loginOTP(e, "mia", apitest.Password, now).Expect(t, 401)
			// A code of the step before is refused once a later one was used.
			advance(clock, 30*time.Second)
			loginOTP(e, "mia", apitest.Password, code(t, second.Secret, &pinnedClock{t: clock.Now().Add(-30 * time.Second)})).Expect(t, 401)
			// A code of the next step (the app's clock a little ahead) works.
			loginOTP(e, "mia", apitest.Password, code(t, second.Secret, &pinnedClock{t: clock.Now().Add(30 * time.Second)})).Expect(t, 200)

			// Recovery codes: each once; dashes and case do not matter.
			loginOTP(e, "mia", apitest.Password, rec.RecoveryCodes[0]).Expect(t, 200)
			loginOTP(e, "mia", apitest.Password, rec.RecoveryCodes[0]).Expect(t, 401)
			loginOTP(e, "mia", apitest.Password, strings.ToUpper(strings.ReplaceAll(rec.RecoveryCodes[1], "-", ""))).Expect(t, 200)
			var st struct {
				Enabled           bool `json:"enabled"`
				RecoveryCodesLeft int  `json:"recovery_codes_left"`
			}
			e.Get("/api/auth/mfa", mia.Token).Expect(t, 200).JSON(t, &st)
			if !st.Enabled || st.RecoveryCodesLeft != 8 {
				t.Errorf("status %+v, want on with 8 codes left", st)
			}

			// A browser's login (the session cookie) asks for the code the same way.
			cookieLogin := func(otp string) *apitest.Response {
				return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Header: http.Header{"X-Tuxlab-Session": {"cookie"}},
					Body: map[string]string{"username": "mia", "password": apitest.Password, "otp": otp}})
			}
			if r := cookieLogin(""); r.Status != 401 || r.Detail() != "Two-factor code required" || r.Header.Get("Set-Cookie") != "" {
				t.Fatalf("cookie login without a code: %d %v %s", r.Status, r.Header, r.Body)
			}
			advance(clock, 60*time.Second)
			if r := cookieLogin(code(t, second.Secret, clock)).Expect(t, 200); !strings.Contains(strings.Join(r.Header.Values("Set-Cookie"), ";"), "tuxlab_session=") {
				t.Fatalf("cookie login with a code set no session: %v", r.Header)
			}

			// The secret is in the setup's answer and nowhere else.
			admin := e.CreateUser("root", auth.RoleAdmin)
			for _, r := range []*apitest.Response{
				e.Get("/api/auth/me", mia.Token), e.Get("/api/auth/mfa", mia.Token), e.Get("/api/profile/me", mia.Token),
				e.Get("/api/admin/users", admin.Token), e.Get("/api/openapi.json", ""),
			} {
				for _, s := range []string{first.Secret, second.Secret, rec.RecoveryCodes[2]} {
					if bytes.Contains(r.Body, []byte(s)) {
						t.Errorf("a secret or recovery code in %s", r.Body)
					}
				}
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

type tokenBody struct {
	AccessToken string `json:"access_token"`
}

// TestMFADisable: turning two-factor sign-in off needs the password and a
// code (a recovery code will do), and then the password alone signs in.
func TestMFADisable(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			e := mfaEnv(t, eng, clock)
			ada := e.CreateUser("ada", auth.RoleStudent)
			disable := func(body any) *apitest.Response {
				return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/mfa/disable", Token: ada.Token, Body: body})
			}
			disable(map[string]string{"password": apitest.Password, "code": "123456"}).Expect(t, 409) // not on
			secret, codes := turnOnMFA(t, e, ada, clock)

			if got := locs(t, disable(map[string]any{}).Expect(t, 422)); strings.Join(got, ",") != "body.password,body.code" {
				t.Errorf("missing fields at %v", got)
			}
			if got := locs(t, disable(map[string]string{"password": "a wrong password", "code": code(t, secret, clock)}).Expect(t, 422)); strings.Join(got, ",") != "body.password" {
				t.Errorf("wrong password at %v", got)
			}
			if got := locs(t, disable(map[string]string{"password": apitest.Password, "code": "zzzz-zzzz-zzzz"}).Expect(t, 422)); strings.Join(got, ",") != "body.code" {
				t.Errorf("wrong code at %v", got)
			}
			// The password alone, without a code field, is not enough either.
			disable(map[string]string{"password": apitest.Password}).Expect(t, 422)
			loginOTP(e, "ada", apitest.Password, "").Expect(t, 401)

			disable(map[string]string{"password": apitest.Password, "code": codes[5]}).Expect(t, 200)
			var me meBody
			e.Get("/api/auth/me", ada.Token).Expect(t, 200).JSON(t, &me)
			if me.MFAEnabled {
				t.Fatal("still on after disable")
			}
			loginOTP(e, "ada", apitest.Password, "").Expect(t, 200)
			// A new setup starts from nothing: the old recovery codes are gone.
			secret2, _ := turnOnMFA(t, e, ada, clock)
			if secret2 == secret {
				t.Fatal("the old secret came back")
			}
			loginOTP(e, "ada", apitest.Password, codes[6]).Expect(t, 401)
			// And with the app's current code it goes off again.
			disable(map[string]string{"password": apitest.Password, "code": code(t, secret2, clock)}).Expect(t, 200)
		})
	}
}

// TestMFACodeOnceUnderConcurrency: the same code (TOTP or recovery) sent
// by several logins at once signs in exactly one of them; the store's
// conditional update, not a read before it, decides.
func TestMFACodeOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			e := mfaEnv(t, eng, clock)
			lee := e.CreateUser("lee", auth.RoleStudent)
			secret, codes := turnOnMFA(t, e, lee, clock)
			for _, c := range []string{code(t, secret, clock), codes[0]} {
				reqs := make([]apitest.Request, 6)
				for i := range reqs {
					reqs[i] = apitest.Request{Method: "POST", Path: "/api/auth/login",
						Body: map[string]string{"username": "lee", "password": apitest.Password, "otp": c}}
				}
				ok := 0
				for _, r := range e.DoConcurrently(reqs) {
					switch r.Status {
					case 200:
						ok++
					case 401:
					default:
						t.Errorf("status %d: %s", r.Status, r.Body)
					}
				}
				if ok != 1 {
					t.Errorf("code %s signed in %d logins at once, want 1", c, ok)
				}
			}
		})
	}
}

// TestMFACodeRateLimit: code attempts are limited per account,
// TUXLAB_AUTH_RATE_USER an hour, more slowly than password attempts: once
// spent, even the right code is 429 after the password's minute has passed,
// and it works again once the hour has given one attempt back.
func TestMFACodeRateLimit(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			limits := &pinnedClock{t: time.Now()}
			e := mfaEnv(t, eng, clock, func(c *config.Config) { c.LoginPerUserPerMin = 4; c.RateLimitNow = limits.Now })
			kim := e.CreateUser("kim", auth.RoleStudent)
			secret, _ := turnOnMFA(t, e, kim, clock) // one code attempt
			right := code(t, secret, clock)
			wrong := fmt.Sprintf("%06d", (atoi(right)+7)%1_000_000)
			for range 3 {
				loginOTP(e, "kim", apitest.Password, wrong).Expect(t, 401)
			}
			// The password's minute still has an attempt; the codes' hour has none.
			r := loginOTP(e, "kim", apitest.Password, right).Expect(t, 429)
			if r.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			advance(limits, time.Minute)
			loginOTP(e, "kim", apitest.Password, right).Expect(t, 429)
			advance(limits, 15*time.Minute) // an hour gives 4 attempts back: one per 15 minutes
			loginOTP(e, "kim", apitest.Password, right).Expect(t, 200)
		})
	}
}

// TestMFARequiredForStaff: with the install's rule on, an admin or
// instructor without two-factor sign-in signs in but reaches only the
// routes that turn it on; students are never held back.
func TestMFARequiredForStaff(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			clock := &pinnedClock{t: time.Now()}
			e := mfaEnv(t, eng, clock)
			root := e.CreateUser("root", auth.RoleAdmin)
			ines := e.CreateUser("ines", auth.RoleInstructor)
			sam := e.CreateUser("sam", auth.RoleStudent)
			setting := func(token, method, query string) *apitest.Response {
				return e.Do(apitest.Request{Method: method, Path: "/api/admin/settings/mfa" + query, Token: token})
			}
			var st struct {
				Required bool     `json:"required"`
				Roles    []string `json:"roles"`
			}
			setting(root.Token, "GET", "").Expect(t, 200).JSON(t, &st)
			if st.Required || strings.Join(st.Roles, ",") != "instructor,admin" {
				t.Fatalf("default setting %+v", st)
			}
			setting(sam.Token, "PUT", "?required=true").Expect(t, 403)
			setting(root.Token, "PUT", "").Expect(t, 422)
			setting(root.Token, "PUT", "?required=maybe").Expect(t, 422)
			setting(root.Token, "PUT", "?required=true").Expect(t, 200).JSON(t, &st)
			if !st.Required {
				t.Fatal("PUT required=true answered required false")
			}

			held := "Two-factor sign-in is required for your role: turn it on first (POST /api/auth/mfa/setup, then POST /api/auth/mfa/enable)"
			for _, c := range []struct {
				who  *apitest.User
				path string
			}{{root, "/api/admin/users"}, {root, "/api/admin/settings/mfa"}, {ines, "/api/lessons/modules"}, {ines, "/api/progress"}} {
				if r := e.Get(c.path, c.who.Token); r.Status != 403 || r.Detail() != held {
					t.Errorf("%s GET %s: %d %s", c.who.Username, c.path, r.Status, r.Body)
				}
			}
			e.Get("/api/lessons/modules", sam.Token).Expect(t, 200)
			// Signing in still works, and so do me, the profile and logout's way.
			loginOTP(e, "ines", apitest.Password, "").Expect(t, 200)
			var me meBody
			e.Get("/api/auth/me", ines.Token).Expect(t, 200).JSON(t, &me)
			if !me.MFASetupRequired {
				t.Error("me does not say the instructor must turn two-factor sign-in on")
			}
			e.Get("/api/auth/me", sam.Token).Expect(t, 200).JSON(t, &me)
			if me.MFASetupRequired {
				t.Error("a student is told to turn two-factor sign-in on")
			}
			e.Get("/api/profile/me", ines.Token).Expect(t, 200)
			var st2 struct {
				SetupRequired bool `json:"setup_required"`
			}
			e.Get("/api/auth/mfa", ines.Token).Expect(t, 200).JSON(t, &st2)
			if !st2.SetupRequired {
				t.Error("GET /api/auth/mfa does not say the instructor must turn it on")
			}

			turnOnMFA(t, e, ines, clock)
			e.Get("/api/lessons/modules", ines.Token).Expect(t, 200)
			e.Get("/api/auth/me", ines.Token).Expect(t, 200).JSON(t, &me)
			if me.MFASetupRequired || !me.MFAEnabled {
				t.Errorf("after enabling: %+v", me)
			}
			turnOnMFA(t, e, root, clock)
			e.Get("/api/admin/users", root.Token).Expect(t, 200)

			// An admin turns off the instructor's two-factor sign-in (lost phone and
			// codes): with the rule on, the instructor is held back again.
			var u struct {
				MFAEnabled bool `json:"mfa_enabled"`
			}
			e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/users/%d/mfa", ines.ID), Token: root.Token}).Expect(t, 200).JSON(t, &u)
			if u.MFAEnabled {
				t.Error("reset answered mfa_enabled true")
			}
			e.Do(apitest.Request{Method: "DELETE", Path: "/api/admin/users/99999/mfa", Token: root.Token}).Expect(t, 404)
			e.Get("/api/lessons/modules", ines.Token).Expect(t, 403)
			loginOTP(e, "ines", apitest.Password, "").Expect(t, 200)

			setting(root.Token, "PUT", "?required=false").Expect(t, 200)
			e.Get("/api/lessons/modules", ines.Token).Expect(t, 200)
		})
	}
}
