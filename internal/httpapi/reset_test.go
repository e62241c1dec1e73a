package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/config"
	"tuxlab/internal/store/storetest"
)

// publicURL is the site address of the reset tests: the links in their mail start with it.
const publicURL = "https://learn.tuxlab.org"

// resetLink finds the reset link in a mail's text and returns its token.
var resetLink = regexp.MustCompile(regexp.QuoteMeta(publicURL) + `/reset-password\?token=([A-Za-z0-9_-]{43})\b`)

func forgot(e *apitest.Env, email string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/forgot-password", Body: map[string]string{"email": email}})
}

func resetPassword(e *apitest.Env, token, password string) *apitest.Response {
	e.T.Helper()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/auth/reset-password",
		Body: map[string]string{"token": token, "new_password": password}})
}

// tokenOf returns the token of the reset link in text.
func tokenOf(t *testing.T, text string) string {
	t.Helper()
	m := resetLink.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no reset link to %s in the mail:\n%s", publicURL, text)
	}
	return m[1]
}

// outbox returns the recipients and bodies of the queued mail, oldest first.
func outbox(t *testing.T, e *apitest.Env) (to, bodies []string) {
	t.Helper()
	rows, err := e.DB.SQL().QueryContext(context.Background(), `SELECT recipient, body FROM mail_outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r, b string
		if err := rows.Scan(&r, &b); err != nil {
			t.Fatal(err)
		}
		to, bodies = append(to, r), append(bodies, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return to, bodies
}

// queuedToken returns the token of the reset mail queued last, read from
// the queue's row: for tests that send no mail (their SMTP server is never
// reached, as no worker runs).
func queuedToken(t *testing.T, e *apitest.Env) string {
	t.Helper()
	_, bodies := outbox(t, e)
	if len(bodies) == 0 {
		t.Fatal("no mail queued")
	}
	return tokenOf(t, bodies[len(bodies)-1])
}

// noSMTP configures an SMTP server where nothing listens; no worker runs in
// the tests that use it, so the queue fills and nothing is sent.
var noSMTP = apitest.WithSMTP("smtp://127.0.0.1:9", publicURL)

// TestPasswordResetByMail walks the whole reset through a real SMTP server:
// the mail arrives with a link, the link's token sets a new password once,
// every token issued before stops working, and an address without an
// account gets the same answer and no mail.
func TestPasswordResetByMail(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			mp := apitest.NewMailpit(t, false)
			e := apitest.New(t, eng, apitest.WithSMTP(mp.URL(), publicURL))
			e.RunMail()
			register(e, "alice", "alice@tuxlab.org", "old password 1").Expect(t, http.StatusCreated)
			var tok1, tok2 struct {
				AccessToken string `json:"access_token"`
			}
			login(e, "alice", "old password 1").Expect(t, http.StatusOK).JSON(t, &tok1)
			login(e, "alice", "old password 1").Expect(t, http.StatusOK).JSON(t, &tok2)

			unknown := forgot(e, "nobody@tuxlab.org").Expect(t, http.StatusOK)
			known := forgot(e, "Alice@TuxLab.org").Expect(t, http.StatusOK)
			if string(unknown.Body) != string(known.Body) {
				t.Fatalf("unknown address answered %s, known %s: the answer tells them apart", unknown.Body, known.Body)
			}

			msg := mp.WaitFor("alice@tuxlab.org")
			if msg.Subject != "Reset your tuxlab password" || msg.From.Address != "tuxlab@tuxlab.org" {
				t.Fatalf("mail = %s from %s", msg, msg.From.Address)
			}
			token := tokenOf(t, msg.Text)
			// Only alice's mail was sent, and only hers was queued.
			if n := len(mp.Messages()); n != 1 {
				t.Fatalf("%d mails received, want 1 (none to the unknown address)", n)
			}
			to, bodies := outbox(t, e)
			if len(to) != 1 || to[0] != "alice@tuxlab.org" {
				t.Fatalf("queued mail to %v, want alice@tuxlab.org alone", to)
			}
			// The queue erased the sent mail's body, and the store keeps
			// only the token's hash.
			if bodies[0] != "" {
				t.Fatalf("a sent mail's body is kept: %q", bodies[0])
			}
			var stored string
			if err := e.DB.SQL().QueryRow(`SELECT token_hash FROM password_resets`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(stored, token) || len(stored) != 64 {
				t.Fatalf("stored token %q: want the SHA-256 of the token in hex", stored)
			}

			// A weak password is refused and leaves the token usable.
			r := resetPassword(e, token, "short").Expect(t, http.StatusUnprocessableEntity)
			if got := locs(t, r); strings.Join(got, ",") != "body.new_password" {
				t.Fatalf("locs %v, want body.new_password", got)
			}
			resetPassword(e, token, "new password 2").Expect(t, http.StatusOK)

			login(e, "alice", "old password 1").Expect(t, http.StatusUnauthorized)
			var fresh struct {
				AccessToken string `json:"access_token"`
			}
			login(e, "alice", "new password 2").Expect(t, http.StatusOK).JSON(t, &fresh)
			for _, old := range []string{tok1.AccessToken, tok2.AccessToken} {
				e.Get("/api/auth/me", old).Expect(t, http.StatusUnauthorized)
			}
			e.Get("/api/auth/me", fresh.AccessToken).Expect(t, http.StatusOK)

			if d := resetPassword(e, token, "new password 3").Expect(t, http.StatusBadRequest).Detail(); !strings.Contains(d, "already used") {
				t.Fatalf("second use: detail %q", d)
			}
			login(e, "alice", "new password 2").Expect(t, http.StatusOK)
		})
	}
}

// TestPasswordResetMailWaitsForTheServer: with the mail server down the
// request still answers 200 at once; the queued row is retried and the
// mail delivered once the server is up.
func TestPasswordResetMailWaitsForTheServer(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			mp := apitest.NewMailpit(t, true) // not started: the port is closed
			e := apitest.New(t, eng, apitest.WithSMTP(mp.URL(), publicURL))
			e.RunMail()
			e.CreateUser("bob", "student")
			forgot(e, "bob@tuxlab.org").Expect(t, http.StatusOK)
			attempts, lastError := waitForFailedAttempt(t, e)
			if attempts < 1 || !strings.Contains(lastError, "connect") {
				t.Fatalf("attempts %d, last error %q: want a failed connection recorded", attempts, lastError)
			}
			if m := string(e.Get("/metrics", "").Expect(t, 200).Body); !strings.Contains(m, "tuxlab_mail_waiting 1\n") {
				t.Errorf("metrics do not show the mail waiting:\n%s", grepLines(m, "tuxlab_mail"))
			}
			mp.Start()
			token := tokenOf(t, mp.WaitFor("bob@tuxlab.org").Text)
			resetPassword(e, token, "brand new pw").Expect(t, http.StatusOK)
			if n := len(mp.Messages()); n != 1 {
				t.Fatalf("%d mails received, want 1", n)
			}
			m := string(e.Get("/metrics", "").Expect(t, 200).Body)
			if !strings.Contains(m, "tuxlab_mail_waiting 0\n") || !strings.Contains(m, "tuxlab_mail_failed 0\n") {
				t.Errorf("metrics after delivery:\n%s", grepLines(m, "tuxlab_mail"))
			}
		})
	}
}

// waitForFailedAttempt waits (up to a minute) until the one queued mail
// has failed at least once, and returns its attempts and last error.
func waitForFailedAttempt(t *testing.T, e *apitest.Env) (int, string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var (
			n    int
			last string
		)
		if err := e.DB.SQL().QueryRow(`SELECT attempts, last_error FROM mail_outbox`).Scan(&n, &last); err != nil {
			t.Fatal(err)
		}
		if last != "" {
			return n, last
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the mail was not tried within a minute")
	return 0, ""
}

// TestPasswordResetMailSurvivesARestart: a mail queued by a process that
// ends before sending it is sent by the next one, from its row.
func TestPasswordResetMailSurvivesARestart(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines() {
		t.Run(string(eng), func(t *testing.T) {
			t.Parallel()
			mp := apitest.NewMailpit(t, false)
			first := apitest.New(t, eng, apitest.WithSMTP(mp.URL(), publicURL)) // no worker runs in it
			first.CreateUser("carol", "student")
			forgot(first, "carol@tuxlab.org").Expect(t, http.StatusOK)
			next := first.Replica()
			next.RunMail()
			token := tokenOf(t, mp.WaitFor("carol@tuxlab.org").Text)
			resetPassword(next, token, "carol's new pw").Expect(t, http.StatusOK)
		})
	}
}

// TestPasswordResetTokens: unknown, malformed, used, superseded and
// expired tokens are 400 with a detail that says which; a malformed body is 422.
func TestPasswordResetTokens(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("dave", "student")
		forgot(e, "dave@tuxlab.org").Expect(t, http.StatusOK)
		older := queuedToken(t, e)
		forgot(e, "dave@tuxlab.org").Expect(t, http.StatusOK)
		newer := queuedToken(t, e)
		if older == newer {
			t.Fatal("two asks gave one token")
		}
		random := make([]byte, 32)
		rand.Read(random)

		for _, tt := range []struct{ name, token, detail string }{
			{"unknown", base64.RawURLEncoding.EncodeToString(random), "not valid"},
			{"malformed", "not-a-token", "not valid"},
			{"empty", "", "not valid"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				d := resetPassword(e, tt.token, "a fine password").Expect(t, http.StatusBadRequest).Detail()
				if !strings.Contains(d, tt.detail) {
					t.Fatalf("detail %q, want it to say %q", d, tt.detail)
				}
			})
		}
		for _, tt := range []struct {
			name string
			body any
			locs string
		}{
			{"missing fields", map[string]string{}, "body.token,body.new_password"},
			{"wrong type", map[string]any{"token": 7, "new_password": "a fine password"}, "body.token"},
			{"not JSON", "token=x", "body"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/reset-password", Body: tt.body}).Expect(t, http.StatusUnprocessableEntity)
				if got := strings.Join(locs(t, r), ","); got != tt.locs {
					t.Fatalf("locs %s, want %s (%s)", got, tt.locs, r.Body)
				}
			})
		}

		// The newer link works; the older one is used up with it.
		resetPassword(e, newer, "dave's new pw").Expect(t, http.StatusOK)
		if d := resetPassword(e, older, "another pw 1").Expect(t, http.StatusBadRequest).Detail(); !strings.Contains(d, "already used") {
			t.Fatalf("older link after a reset: detail %q", d)
		}

		// A link past its hour has expired.
		forgot(e, "dave@tuxlab.org").Expect(t, http.StatusOK)
		late := queuedToken(t, e)
		if _, err := e.DB.SQL().Exec(`UPDATE password_resets SET expires_at = created_at WHERE used_at IS NULL`); err != nil {
			t.Fatal(err)
		}
		if d := resetPassword(e, late, "another pw 2").Expect(t, http.StatusBadRequest).Detail(); !strings.Contains(d, "expired") {
			t.Fatalf("expired link: detail %q", d)
		}
		login(e, "dave", "dave's new pw").Expect(t, http.StatusOK)
	}, noSMTP)
}

// TestForgotPasswordAnswers: malformed addresses are 422; inactive and
// unknown accounts get the same 200 as active ones, and no mail.
func TestForgotPasswordAnswers(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		for _, tt := range []struct {
			name string
			body any
			locs string
		}{
			{"missing", map[string]string{}, "body.email"},
			{"not an address", map[string]string{"email": "erin"}, "body.email"},
			{"reserved domain", map[string]string{"email": "erin@example.com"}, "body.email"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := e.Do(apitest.Request{Method: "POST", Path: "/api/auth/forgot-password", Body: tt.body}).Expect(t, http.StatusUnprocessableEntity)
				if got := strings.Join(locs(t, r), ","); got != tt.locs {
					t.Fatalf("locs %s, want %s (%s)", got, tt.locs, r.Body)
				}
			})
		}
		erin := e.CreateUser("erin", "student")
		if _, err := e.App.Auth.SetActive(context.Background(), erin.ID, false); err != nil {
			t.Fatal(err)
		}
		inactive := forgot(e, "erin@tuxlab.org").Expect(t, http.StatusOK)
		unknown := forgot(e, "frank@tuxlab.org").Expect(t, http.StatusOK)
		if string(inactive.Body) != string(unknown.Body) {
			t.Fatalf("inactive %s, unknown %s", inactive.Body, unknown.Body)
		}
		if to, _ := outbox(t, e); len(to) != 0 {
			t.Fatalf("mail queued to %v", to)
		}
	}, noSMTP)
}

// TestPasswordResetRateLimits: five asks an hour per address, known or
// not, then 429; and the client's address is limited on both routes.
func TestPasswordResetRateLimits(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("gina", "student")
		for _, addr := range []string{"gina@tuxlab.org", "nobody@tuxlab.org"} {
			for i := range 5 {
				if r := forgot(e, addr); r.Status != http.StatusOK {
					t.Fatalf("%s ask %d: %d %s", addr, i+1, r.Status, r.Body)
				}
			}
			r := forgot(e, addr).Expect(t, http.StatusTooManyRequests)
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		}
		if to, _ := outbox(t, e); len(to) != 5 {
			t.Fatalf("%d mails queued, want 5", len(to))
		}
	}, noSMTP)

	for _, eng := range storetest.Engines() {
		t.Run(string(eng)+"/per client", func(t *testing.T) {
			t.Parallel()
			e := apitest.New(t, eng, noSMTP, func(c *config.Config) { c.AuthPerIPPerMinute = 2 })
			forgot(e, "a@tuxlab.org").Expect(t, http.StatusOK)
			resetPassword(e, "x", "a fine password").Expect(t, http.StatusBadRequest)
			forgot(e, "b@tuxlab.org").Expect(t, http.StatusTooManyRequests)
			resetPassword(e, "x", "a fine password").Expect(t, http.StatusTooManyRequests)
		})
	}
}

// TestPasswordResetOff: without a mail server both routes answer 503 and say why.
func TestPasswordResetOff(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		e.CreateUser("hal", "student")
		for _, r := range []*apitest.Response{forgot(e, "hal@tuxlab.org"), resetPassword(e, strings.Repeat("a", 43), "a fine password")} {
			if r.Expect(t, http.StatusServiceUnavailable); !strings.Contains(r.Detail(), "TUXLAB_SMTP_URL") {
				t.Fatalf("detail %q does not say what to configure", r.Detail())
			}
		}
		if to, _ := outbox(t, e); len(to) != 0 {
			t.Fatalf("mail queued without a mail server: %v", to)
		}
	})
}

// TestPasswordResetEndsTerminals: a reset ends the account's open terminals
// at once, with the reason, as a password change does.
func TestPasswordResetEndsTerminals(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("ivy", "student")
		c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		tc.Exchange("echo ready-$((1+1))\n", "ready-2")
		forgot(e, "ivy@tuxlab.org").Expect(t, http.StatusOK)
		resetPassword(e, queuedToken(t, e), "ivy's new password").Expect(t, http.StatusOK)
		tc.ExpectClosed(401, "The password of this account changed: sign in again")
	}, noSMTP, func(c *config.Config) { c.TerminalPingInterval = time.Hour })
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
