package web_test

import (
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
)

// TestBrowserMFA drives headless Chromium through e2e/mfa.mjs against the
// real application on SQLite: two-factor sign-in set up and turned on from
// the profile, the recovery codes shown once, a sign-in asked for the code
// and a recovery code used; then an admin requires it of staff and is sent
// to the profile to turn it on; axe in both colour schemes throughout. No sandbox is
// involved, so it needs no container engine.
func TestBrowserMFA(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes a few seconds")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	e := apitest.New(t, "sqlite")
	admin := e.CreateUser("admin", auth.RoleAdmin)
	shots := shotsDir(t, e2e, "mfa")
	runScript(t, node, e2e, "mfa.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_ADMIN=" + admin.Username + ":" + apitest.Password})
}
