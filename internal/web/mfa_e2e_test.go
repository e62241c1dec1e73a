package web_test

import (
	"os"
	"os/exec"
	"path/filepath"
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
	stop := t.Skipf
	if browserRequired() {
		stop = t.Fatalf
	}
	e2e, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		stop("no Chromium at %s (apt-get install chromium; TUXLAB_TEST_BROWSER=1 makes this fatal)", chromium)
		return
	}
	node, err := exec.LookPath("node")
	if err != nil {
		stop("node is missing (apt-get install nodejs npm; TUXLAB_TEST_BROWSER=1 makes this fatal)")
		return
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(e2e, "node_modules", pkg)); err != nil {
			stop("e2e/node_modules/%s is missing: run npm ci in e2e/ (TUXLAB_TEST_BROWSER=1 makes this fatal)", pkg)
			return
		}
	}
	e := apitest.New(t, "sqlite")
	admin := e.CreateUser("admin", auth.RoleAdmin)
	shots := shotsDir(t, e2e, "mfa")
	runScript(t, node, e2e, "mfa.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_ADMIN=" + admin.Username + ":" + apitest.Password})
}
