package web_test

import (
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

// TestBrowserPasswordReset drives headless Chromium through e2e/reset.mjs:
// a forgotten password from the sign-in page to the mail, read from a real
// SMTP server (Mailpit), its link and the new password; the old password and
// the used link are refused. It needs the browser (TUXLAB_TEST_BROWSER) and
// Mailpit (TUXLAB_TEST_SMTP), no container engine.
func TestBrowserPasswordReset(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a browser test")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	mp := apitest.NewMailpit(t, false)
	e := apitest.New(t, "sqlite", apitest.WithSMTP(mp.URL(), "https://learn.tuxlab.org"))
	e.RunMail()
	ada := e.CreateUser("ada", auth.RoleStudent)

	shots := shotsDir(t, e2e, "reset")
	runScript(t, node, e2e, "reset.mjs", e.URL, shots, []string{
		"CHROMIUM=" + chromium,
		"TUXLAB_E2E_MAILPIT=" + mp.HTTPURL(),
		"TUXLAB_E2E_USER=" + ada.Username + ":" + ada.Email + ":" + apitest.Password,
	})
}

// TestBrowserEmailVerification drives headless Chromium through
// e2e/verify.mjs against a server that requires a confirmed address: sign
// up, the refused sign-in with its "send the link again", the mail from a
// real SMTP server (Mailpit), the /verify-email page, and signing in.
func TestBrowserEmailVerification(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a browser test")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	mp := apitest.NewMailpit(t, false)
	e := apitest.New(t, "sqlite", apitest.WithSMTP(mp.URL(), "https://learn.tuxlab.org"),
		func(c *config.Config) { c.RequireEmailVerification = true })
	e.RunMail()

	shots := shotsDir(t, e2e, "verify")
	runScript(t, node, e2e, "verify.mjs", e.URL, shots, []string{
		"CHROMIUM=" + chromium,
		"TUXLAB_E2E_MAILPIT=" + mp.HTTPURL(),
	})
}
