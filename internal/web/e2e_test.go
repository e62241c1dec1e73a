package web_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

// browserRequired reports whether a missing browser must fail the end-to-end
// test rather than skip it: TUXLAB_TEST_BROWSER is set (scripts/test.sh sets
// it once it has installed chromium and e2e's node_modules).
func browserRequired() bool { return os.Getenv("TUXLAB_TEST_BROWSER") != "" }

// TestBrowserLearner drives headless Chromium through e2e/learner.mjs against
// the real application: a real database with the bundled curriculum, real
// sandboxes on the container engine, and the terminal's WebSocket; then
// e2e/phone.mjs walks the same way at a phone's size. See the scripts for
// every step; they save a screenshot of each page into artifacts/screenshots
// and its phone/ subdirectory (or $TUXLAB_SCREENSHOTS).
func TestBrowserLearner(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes half a minute")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	// The bundled laboratories run on the Debian image; without an engine the
	// test skips, or fails where the engine is required (CI, TUXLAB_TEST_DOCKER).
	if apitest.RequireImage(t, apitest.DebianImage) == nil {
		return
	}

	e := apitest.New(t, "sqlite", func(c *config.Config) {
		c.BundledCurriculum = true
		// The script checks twice in a row, and once more at once to watch the
		// Check button count down: long enough to be sure that one is too soon.
		c.LabCheckInterval = 3 * time.Second
		// Idle terminals are warned 10 s ahead, so the script can watch the
		// countdown; every other step types far more often than that.
		c.TerminalIdleTimeout = 20 * time.Second
	})
	admin := e.CreateUser("admin", auth.RoleAdmin)

	shots := shotsDir(t, e2e, "")

	// The desktop walk, then the same learner's walk on a phone (a new
	// user, its own screenshots): one after the other, as the two cores of
	// a CI runner would make either flaky if they shared them.
	scripts := []struct {
		name, script, shots string
		env                 []string
	}{
		{"desktop", "learner.mjs", shots, []string{
			"TUXLAB_E2E_ADMIN=" + admin.Username + ":" + apitest.Password,
			"TUXLAB_E2E_IDLE_WARNING=1",
		}},
		{"phone", "phone.mjs", shotsDir(t, e2e, "phone"), nil},
	}
	for _, s := range scripts {
		t.Run(s.name, func(t *testing.T) {
			runScript(t, node, e2e, s.script, e.URL, s.shots, append(s.env, "CHROMIUM="+chromium))
		})
	}
}

// TestBrowserClasses drives headless Chromium through e2e/classes.mjs: an
// instructor creates a class, a learner joins it from the dashboard, the
// instructor sets an assignment and reads the learners table and its CSV,
// the learner sees the assignment; axe checks every page in light and dark.
// It needs no container engine.
func TestBrowserClasses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes a few seconds")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum = true })
	teacher := e.CreateUser("teach", auth.RoleInstructor)
	learner := e.CreateUser("lea", auth.RoleStudent)
	shots := shotsDir(t, e2e, "classes")
	runScript(t, node, e2e, "classes.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_TEACHER=" + teacher.Username + ":" + apitest.Password, "TUXLAB_E2E_LEARNER=" + learner.Username + ":" + apitest.Password})
}

// browser finds node, Chromium and e2e's node_modules; when one is missing
// it skips t (or fails it where TUXLAB_TEST_BROWSER requires the browser)
// and returns false.
func browser(t *testing.T) (node, chromium, e2e string, ok bool) {
	t.Helper()
	stop := t.Skipf
	if browserRequired() {
		stop = t.Fatalf
	}
	var err error
	if e2e, err = filepath.Abs(filepath.Join("..", "..", "e2e")); err != nil {
		t.Fatal(err)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		stop("no Chromium at %s (apt-get install chromium; TUXLAB_TEST_BROWSER=1 makes this fatal)", chromium)
		return "", "", "", false
	}
	if node, err = exec.LookPath("node"); err != nil {
		stop("node is missing (apt-get install nodejs npm; TUXLAB_TEST_BROWSER=1 makes this fatal)")
		return "", "", "", false
	}
	for _, pkg := range []string{"playwright-core", "axe-core"} {
		if _, err := os.Stat(filepath.Join(e2e, "node_modules", pkg)); err != nil {
			stop("e2e/node_modules/%s is missing: run npm ci in e2e/ (TUXLAB_TEST_BROWSER=1 makes this fatal)", pkg)
			return "", "", "", false
		}
	}
	return node, chromium, e2e, true
}

// TestBrowserAuthor drives headless Chromium through e2e/author.mjs: an
// instructor makes a draft module and lesson on the Author page, previews
// the lesson and publishes both, while a learner beside them sees nothing of
// the draft, then the published lesson. No sandbox is involved.
func TestBrowserAuthor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes seconds")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	e := apitest.New(t, "sqlite")
	teacher := e.CreateUser("teacher", auth.RoleInstructor)
	learner := e.CreateUser("learner", auth.RoleStudent)
	shots := shotsDir(t, e2e, "author")
	runScript(t, node, e2e, "author.mjs", e.URL, shots, []string{
		"TUXLAB_E2E_INSTRUCTOR=" + teacher.Username + ":" + apitest.Password,
		"TUXLAB_E2E_LEARNER=" + learner.Username + ":" + apitest.Password,
		"CHROMIUM=" + chromium,
	})
}

// shotsDir returns the directory for a browser script's screenshots: sub
// below artifacts/screenshots (or $TUXLAB_SCREENSHOTS), made if missing and
// emptied of an earlier run's pictures. The directories below it are left
// alone: they are other scripts', whose tests run beside this one.
func shotsDir(t *testing.T, e2e, sub string) string {
	t.Helper()
	root := os.Getenv("TUXLAB_SCREENSHOTS")
	if root == "" {
		root = filepath.Join(e2e, "..", "artifacts", "screenshots")
	}
	dir, err := filepath.Abs(filepath.Join(root, sub))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if !en.IsDir() {
			if err := os.Remove(filepath.Join(dir, en.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// runScript runs node script against url in dir e2e with env added and its
// screenshots in shots, and fails t when it exits non-zero; its output goes
// to the test's log.
func runScript(t *testing.T, node, e2e, script, url, shots string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, node, script, url)
	cmd.Dir = e2e
	cmd.Env = append(append(os.Environ(), env...), "TUXLAB_SCREENSHOTS="+shots)
	out, err := cmd.CombinedOutput()
	t.Logf("node %s %s (%s):\n%s", script, url, time.Since(start).Round(time.Second), strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the browser test failed (%v); screenshots in %s", err, shots)
	}
}

// TestBrowserShare drives two headless Chromium contexts through
// e2e/share.mjs: a learner shares a lesson's terminal from its header, a
// second person signed in as another user opens the link and sees what the
// learner typed before and types now, cannot type, and is closed out when
// the learner ends sharing; axe checks the dialog and the watch page.
func TestBrowserShare(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the browser test takes half a minute")
	}
	node, chromium, e2e, ok := browser(t)
	if !ok {
		return
	}
	if apitest.RequireImage(t, apitest.DebianImage) == nil {
		return
	}
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum = true })
	learner := e.CreateUser("learner", auth.RoleStudent)
	guest := e.CreateUser("teacher", auth.RoleInstructor)
	shots := shotsDir(t, e2e, "share")
	runScript(t, node, e2e, "share.mjs", e.URL, shots, []string{"CHROMIUM=" + chromium,
		"TUXLAB_E2E_LEARNER=" + learner.Username + ":" + apitest.Password, "TUXLAB_E2E_GUEST=" + guest.Username + ":" + apitest.Password})
}
