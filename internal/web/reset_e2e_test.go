package web_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
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
	node, chromium, e2e := browserTools(t)
	if node == "" {
		return
	}
	mp := apitest.NewMailpit(t, false)
	e := apitest.New(t, "sqlite", apitest.WithSMTP(mp.URL(), "https://learn.tuxlab.org"))
	e.RunMail()
	ada := e.CreateUser("ada", auth.RoleStudent)

	shots := os.Getenv("TUXLAB_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(e2e, "..", "artifacts", "screenshots")
	}
	shots, _ = filepath.Abs(filepath.Join(shots, "reset"))
	os.RemoveAll(shots)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	runScript(t, node, e2e, "reset.mjs", e.URL, shots, []string{
		"CHROMIUM=" + chromium,
		"TUXLAB_E2E_MAILPIT=" + mp.HTTPURL(),
		"TUXLAB_E2E_USER=" + ada.Username + ":" + ada.Email + ":" + apitest.Password,
	})
}

// browserTools returns node, Chromium and the e2e directory, or "" after
// skipping t (failing it when TUXLAB_TEST_BROWSER is set) if one is missing.
func browserTools(t *testing.T) (node, chromium, e2e string) {
	t.Helper()
	stop := t.Skipf
	if browserRequired() {
		stop = t.Fatalf
	}
	e2e, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		stop("no Chromium at %s (apt-get install chromium; TUXLAB_TEST_BROWSER=1 makes this fatal)", chromium)
		return "", "", ""
	}
	if node, err = exec.LookPath("node"); err != nil {
		stop("node is missing (apt-get install nodejs npm; TUXLAB_TEST_BROWSER=1 makes this fatal)")
		return "", "", ""
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(e2e, "node_modules", pkg)); err != nil {
			stop("e2e/node_modules/%s is missing: run npm ci in e2e/ (TUXLAB_TEST_BROWSER=1 makes this fatal)", pkg)
			return "", "", ""
		}
	}
	return node, chromium, e2e
}
