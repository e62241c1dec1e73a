package sandbox_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// TestJournalAfterRestart: lesson 07/05 starts journald by hand in a Debian
// sandbox and reads what it logged. After a stop and a start (the idle stop)
// the same steps must work again: the runtime journal in /run survives the
// restart, and journald only reopens it for a machine it can name.
func TestJournalAfterRestart(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx := context.Background()
	tpl, err := db.Sandboxes().FindTemplateByName(ctx, "Debian")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.svc.Create(ctx, f.user, sandbox.NewContainer{TemplateID: tpl.ID})
	if err != nil {
		t.Fatal(err)
	}
	id := c.ID
	run := func(script string) string {
		t.Helper()
		res, err := f.svc.Exec(ctx, f.user, id, sandbox.Script{Text: script, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Fatalf("%s: %+v", script, res)
		}
		return res.Stdout
	}
	machineID := func() string {
		t.Helper()
		return strings.TrimSpace(run("cat /etc/machine-id"))
	}
	// The lesson's "In the sandbox" steps, as the learner types them.
	journal := func(message string) {
		t.Helper()
		run(`sudo sh -c '/lib/systemd/systemd-journald > /dev/null 2>&1 &'
sudo ln -sf /run/systemd/journal/dev-log /dev/log`)
		var out string
		for range 50 {
			// /run outlives a restart, and with it the last journald's socket
			// file: until the new one listens, a message can be lost, so the
			// learner's logger is tried again until journald has it.
			run(`logger -t backup "` + message + `" 2>/dev/null || true`)
			out = run("sudo journalctl -t backup --no-pager 2>&1 || true")
			if strings.Contains(out, message) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("journalctl -t backup does not show %q:\n%s", message, out)
	}
	first := machineID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first) {
		t.Fatalf("/etc/machine-id is %q, not a machine id", first)
	}
	if got := strings.TrimSpace(run("stat -c '%a %U:%G' /etc/machine-id")); got != "444 root:root" {
		t.Fatalf("/etc/machine-id is %s, not 444 root:root as on Debian", got)
	}
	journal("before the restart")
	if _, err := f.svc.Stop(ctx, f.user, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Start(ctx, f.user, id); err != nil {
		t.Fatal(err)
	}
	if got := machineID(); got != first {
		t.Fatalf("the machine id changed over a restart: %q, then %q", first, got)
	}
	journal("after the restart")

	// Each sandbox is its own machine.
	other, err := f.svc.Create(ctx, f.user, sandbox.NewContainer{TemplateID: tpl.ID})
	if err != nil {
		t.Fatal(err)
	}
	id = other.ID
	if got := machineID(); got == first {
		t.Fatalf("two sandboxes share the machine id %s", got)
	}
}
