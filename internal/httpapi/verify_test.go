package httpapi_test

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/config"
	"tuxlab/internal/store/storetest"
)

// verifyLink finds the confirmation link in a mail's text.
var verifyLink = regexp.MustCompile(regexp.QuoteMeta(publicURL) + `/verify-email\?token=([A-Za-z0-9_-]{43})\b`)

// requireVerification turns TUXLAB_REQUIRE_EMAIL_VERIFICATION on.
func requireVerification(c *config.Config) { c.RequireEmailVerification = true }

// unverifiedDetail is the login's 403 detail for an unconfirmed address.
const unverifiedDetail = "Confirm your e-mail address: we sent you a link"

func verifyEmail(e *apitest.Env, token string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": token}})
}

func resendVerification(e *apitest.Env, email string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/resend-verification", Body: map[string]string{"email": email}})
}

// verifyTokenOf returns the token of the confirmation link in text.
func verifyTokenOf(t *testing.T, text string) string {
	t.Helper()
	m := verifyLink.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no confirmation link to %s in the mail:\n%s", publicURL, text)
	}
	return m[1]
}

// queuedVerifyToken returns the token of the mail queued last.
func queuedVerifyToken(t *testing.T, e *apitest.Env) string {
	t.Helper()
	_, bodies := outbox(t, e)
	if len(bodies) == 0 {
		t.Fatal("no mail queued")
	}
	return verifyTokenOf(t, bodies[len(bodies)-1])
}

// TestVerifyEmailByMail walks a registration through a real SMTP server:
// the account cannot sign in until the link of its mail is opened, then
// can; a resend for an unknown address answers the same and mails nothing.
func TestVerifyEmailByMail(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			mp := apitest.NewMailpit(t, false)
			e := apitest.New(t, eng, apitest.WithSMTP(mp.URL(), publicURL), requireVerification)
			e.RunMail()
			register(e, "alice", "alice@tuxlab.org", "alice password 1").Expect(t, http.StatusCreated)

			r := login(e, "alice", "alice password 1").Expect(t, http.StatusForbidden)
			if r.Detail() != unverifiedDetail {
				t.Fatalf("unconfirmed login: detail %q, want %q", r.Detail(), unverifiedDetail)
			}
			if strings.Contains(string(r.Body), "access_token") {
				t.Fatalf("unconfirmed login gave a token: %s", r.Body)
			}
			// A wrong password says nothing about the address.
			login(e, "alice", "wrong password 1").Expect(t, http.StatusUnauthorized)

			msg := mp.WaitFor("alice@tuxlab.org")
			if msg.Subject != "Confirm your tuxlab e-mail address" {
				t.Fatalf("mail = %s", msg)
			}
			token := verifyTokenOf(t, msg.Text)
			var stored string
			if err := e.DB.SQL().QueryRow(`SELECT token_hash FROM email_verifications`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(stored, token) || len(stored) != 64 {
				t.Fatalf("stored token %q: want the SHA-256 of the token in hex", stored)
			}

			unknown := resendVerification(e, "nobody@tuxlab.org").Expect(t, http.StatusOK)

			verifyEmail(e, token).Expect(t, http.StatusOK)
			login(e, "alice", "alice password 1").Expect(t, http.StatusOK)
			if d := verifyEmail(e, token).Expect(t, http.StatusBadRequest).Detail(); !strings.Contains(d, "already used") {
				t.Fatalf("second use: detail %q", d)
			}
			// A confirmed address gets the same answer as an unknown one, and no mail.
			known := resendVerification(e, "Alice@TuxLab.org").Expect(t, http.StatusOK)
			if string(unknown.Body) != string(known.Body) {
				t.Fatalf("unknown address answered %s, confirmed %s", unknown.Body, known.Body)
			}
			if to, _ := outbox(t, e); len(to) != 1 || to[0] != "alice@tuxlab.org" {
				t.Fatalf("queued mail to %v, want alice@tuxlab.org once", to)
			}
			if n := len(mp.Messages()); n != 1 {
				t.Fatalf("%d mails received, want 1", n)
			}
		})
	}
}

// TestVerifyEmailTokens: unknown, malformed, used and expired tokens are
// 400 with a detail that says which; a resend mails a new link to an
// unconfirmed account; admins' accounts need no confirmation.
func TestVerifyEmailTokens(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		register(e, "dave", "dave@tuxlab.org", "dave password 1").Expect(t, http.StatusCreated)
		first := queuedVerifyToken(t, e)
		resendVerification(e, "DAVE@tuxlab.org").Expect(t, http.StatusOK)
		second := queuedVerifyToken(t, e)
		if first == second {
			t.Fatal("the resend mailed the same token")
		}
		resendVerification(e, "nobody@tuxlab.org").Expect(t, http.StatusOK)
		if to, _ := outbox(t, e); len(to) != 2 {
			t.Fatalf("queued mail to %v, want dave twice", to)
		}
		random := make([]byte, 32)
		rand.Read(random)
		for _, tt := range []struct{ name, token, detail string }{
			{"unknown", base64.RawURLEncoding.EncodeToString(random), "not valid"},
			{"malformed", "not-a-token", "not valid"},
			{"empty", "", "not valid"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				d := verifyEmail(e, tt.token).Expect(t, http.StatusBadRequest).Detail()
				if !strings.Contains(d, tt.detail) {
					t.Fatalf("detail %q, want it to say %q", d, tt.detail)
				}
			})
		}
		for _, tt := range []struct {
			name, path string
			body       any
			locs       string
		}{
			{"verify missing token", "/api/auth/verify-email", map[string]string{}, "body.token"},
			{"verify wrong type", "/api/auth/verify-email", map[string]any{"token": 7}, "body.token"},
			{"resend missing email", "/api/auth/resend-verification", map[string]string{}, "body.email"},
			{"resend malformed email", "/api/auth/resend-verification", map[string]string{"email": "nope"}, "body.email"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: "POST", Path: tt.path, Body: tt.body}).Expect(t, http.StatusUnprocessableEntity)
				if got := strings.Join(locs(t, r), ","); got != tt.locs {
					t.Fatalf("locs %s, want %s (%s)", got, tt.locs, r.Body)
				}
			})
		}

		// An expired link is refused and leaves the account unconfirmed.
		if _, err := e.DB.SQL().Exec(`UPDATE email_verifications SET expires_at = created_at`); err != nil {
			t.Fatal(err)
		}
		if d := verifyEmail(e, second).Expect(t, http.StatusBadRequest).Detail(); !strings.Contains(d, "expired") {
			t.Fatalf("expired link: detail %q", d)
		}
		login(e, "dave", "dave password 1").Expect(t, http.StatusForbidden)

		resendVerification(e, "dave@tuxlab.org").Expect(t, http.StatusOK)
		third := queuedVerifyToken(t, e)
		verifyEmail(e, third).Expect(t, http.StatusOK)
		login(e, "dave", "dave password 1").Expect(t, http.StatusOK)

		// Accounts an admin creates, and fixtures (accounts that existed
		// before), count as confirmed.
		admin := e.CreateUser("root", "admin")
		login(e, "root", apitest.Password).Expect(t, http.StatusOK)
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/users", Token: admin.Token, Body: map[string]string{
			"username": "erin", "email": "erin@tuxlab.org", "password": "erin password 1", "role": "student"}}).Expect(t, http.StatusCreated)
		login(e, "erin", "erin password 1").Expect(t, http.StatusOK)
	}, noSMTP, requireVerification)
}

// TestVerifyEmailOff: with the switch off (the default) registration signs
// in at once, no mail is queued, and the verification routes answer 503.
func TestVerifyEmailOff(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		register(e, "fay", "fay@tuxlab.org", "fay password 1").Expect(t, http.StatusCreated)
		login(e, "fay", "fay password 1").Expect(t, http.StatusOK)
		if to, _ := outbox(t, e); len(to) != 0 {
			t.Fatalf("mail queued with verification off: %v", to)
		}
		for _, r := range []*apitest.Response{verifyEmail(e, strings.Repeat("a", 43)), resendVerification(e, "fay@tuxlab.org")} {
			if r.Expect(t, http.StatusServiceUnavailable); !strings.Contains(r.Detail(), "off") {
				t.Fatalf("detail %q does not say it is off", r.Detail())
			}
		}
	}, noSMTP)
}

// TestVerifyEmailRateLimits: resend is limited per address like forgot-password.
func TestVerifyEmailRateLimits(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		for i := range 5 {
			if r := resendVerification(e, "nobody@tuxlab.org"); r.Status != http.StatusOK {
				t.Fatalf("ask %d: %d %s", i+1, r.Status, r.Body)
			}
		}
		if r := resendVerification(e, "nobody@tuxlab.org").Expect(t, http.StatusTooManyRequests); r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}, noSMTP, requireVerification)
}
