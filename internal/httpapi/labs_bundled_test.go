package httpapi_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// The bundled laboratories, met as a learner meets them: through the API, in
// the Debian sandbox, with the checks' edge cases a plain solution does not
// reach (content/content_test.go proves each lab both ways). The checks do
// not depend on the database, so these run on SQLite only.

// bundledLab is a bundled laboratory started by a learner of its own.
type bundledLab struct {
	t       *testing.T
	e       *apitest.Env
	learner *apitest.User
	id      int64
	attempt labAttemptBody
}

// startBundled starts the bundled laboratory slug as a new learner.
func startBundled(t *testing.T, e *apitest.Env, slug string) *bundledLab {
	t.Helper()
	var labs []struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	}
	e.Get("/api/laboratories", "").Expect(t, 200).JSON(t, &labs)
	for _, l := range labs {
		if l.Slug == slug {
			b := &bundledLab{t: t, e: e, learner: e.CreateUser("learner-"+slug, auth.RoleStudent), id: l.ID}
			b.attempt = startLab(t, e, b.learner.Token, l.ID)
			return b
		}
	}
	t.Fatalf("no bundled laboratory %s", slug)
	return nil
}

// run runs script in the lab's sandbox, as root or as the learner.
func (b *bundledLab) run(script string, root bool) string {
	b.t.Helper()
	res, err := b.e.App.Sandboxes.Exec(context.Background(), actor.User(b.learner.ID), *b.attempt.ContainerID,
		sandbox.Script{Text: script, AsRoot: root, Timeout: time.Minute})
	if err != nil || !res.OK() {
		b.t.Fatalf("%q: %v %s", script, err, res.Transcript())
	}
	return res.Stdout
}

// check checks the attempt through the API.
func (b *bundledLab) check() labAttemptBody {
	b.t.Helper()
	var at labAttemptBody
	b.e.Do(apitest.Request{Method: "POST", Path: labPath(b.id, "check"), Token: b.learner.Token}).Expect(b.t, 200).JSON(b.t, &at)
	return at
}

func bundledEnv(t *testing.T) *apitest.Env {
	apitest.RequireEngine(t)
	apitest.RequireImage(t, apitest.DebianImage)
	return apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum, c.LabCheckInterval = true, time.Millisecond })
}

// TestBundledSudoersRuleGrantsNoMore: lab 3's last task accepts the rule it
// asks for, written any usual way, and refuses every rule that grants more:
// another command, any apt-get command, other users to run as, SETENV, a
// password, changed defaults.
func TestBundledSudoersRuleGrantsNoMore(t *testing.T) {
	t.Parallel()
	b := startBundled(t, bundledEnv(t), "users-groups-lab")
	// Everything but the rule, as the lab's solution does it.
	b.run("sudo groupadd -g 2000 webdev && sudo useradd -m -s /bin/bash -c 'Alice Martin' -G webdev alice && sudo usermod -aG webdev bob", false)
	cases := []struct {
		rule string
		pass bool
	}{
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update", true},
		{"%webdev ALL = NOPASSWD: /usr/bin/apt-get update", true},
		{"Cmnd_Alias REFRESH = /usr/bin/apt-get update\n%webdev ALL=(root:root) NOPASSWD: REFRESH", true},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update, /bin/bash", false},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update, /usr/bin/apt-get", false},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get *", false},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update\n%webdev ALL=(root) NOPASSWD: /usr/bin/less", false},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update\nbob ALL=(root) NOPASSWD: /usr/bin/vi", false},
		{"%webdev ALL=(ALL) NOPASSWD: /usr/bin/apt-get update", false},
		{"%webdev ALL=(root) NOPASSWD:SETENV: /usr/bin/apt-get update", false},
		{"%webdev ALL=(root) NOPASSWD: ALL", false},
		{"%webdev ALL=(root) /usr/bin/apt-get update", false},
		{"%webdev ALL=(root) NOPASSWD: /usr/bin/apt-get update\nDefaults:%webdev !env_reset", false},
	}
	for _, c := range cases {
		b.run(fmt.Sprintf("printf '%%s\\n' '%s' > /etc/sudoers.d/webdev && chmod 440 /etc/sudoers.d/webdev && visudo -cf /etc/sudoers.d/webdev",
			strings.ReplaceAll(c.rule, "\n", "' '")), true)
		task := b.check().Tasks[4]
		if task.Passed != c.pass || !c.pass && len(task.Feedback) == 0 {
			t.Errorf("rule %q: passed %t (want %t), feedback %q", c.rule, task.Passed, c.pass, task.Feedback)
		}
	}
}

// TestBundledProcessesLabAfterRestart: after an idle stop and a start, the
// processes the setup started are gone. Lab 5 then gives no task for free
// (ending leaky-worker is not done by the restart), and each task about those
// processes says why it cannot be done rather than failing without reason.
// Its feedback never names a PID the learner has to find.
func TestBundledProcessesLabAfterRestart(t *testing.T) {
	t.Parallel()
	e := bundledEnv(t)
	b := startBundled(t, e, "processes-lab")
	pids := strings.Fields(b.run("pgrep -x 'data-sync|leaky-worker|report-gen|encoder'", true))
	if len(pids) != 4 {
		t.Fatalf("the setup's programs: %q", pids)
	}
	fresh := b.check()
	for i, task := range fresh.Tasks {
		for _, f := range task.Feedback {
			for _, pid := range pids {
				if regexp.MustCompile(`\b` + pid + `\b`).MatchString(f) {
					t.Errorf("task %d's feedback names PID %s: %q", i, pid, f)
				}
			}
		}
	}
	stopSandbox(t, e, b.learner.Token, *b.attempt.ContainerID)
	restarted := b.check() // starts the sandbox again
	for i, task := range restarted.Tasks[:4] {
		if task.Passed || len(task.Feedback) == 0 || !strings.Contains(task.Feedback[0], "restarted") {
			t.Errorf("task %d after a restart: passed %t, feedback %q", i, task.Passed, task.Feedback)
		}
	}
}

// TestBundledShopMustSurviveTheTerminal: lab 10's shop started with a plain
// & from the terminal would end when the terminal closes, so the task fails
// while it runs that way; started with nohup, or setsid, it passes.
func TestBundledShopMustSurviveTheTerminal(t *testing.T) {
	t.Parallel()
	e := bundledEnv(t)
	b := startBundled(t, e, "networking-lab")
	tc := e.OpenTerminal(t, terminalPath(*b.attempt.ContainerID), b.learner.Token, 80, 24)
	listening := func() bool {
		return strings.Contains(b.run("ss -tlnH 'sport = :8080'", false), "127.0.0.1:8080")
	}
	for i, start := range []string{"tinyhttp 127.0.0.1 8080 >/dev/null 2>&1 &", "nohup tinyhttp 127.0.0.1 8080 >/dev/null 2>&1 &",
		"setsid tinyhttp 127.0.0.1 8080 >/dev/null 2>&1 < /dev/null &"} {
		tc.Exchange(fmt.Sprintf("%s echo started-$((%d*7))\n", start, i+6), fmt.Sprintf("started-%d", (i+6)*7))
		eventually(t, 30*time.Second, "the shop to listen", listening)
		task := b.check().Tasks[3]
		if pass := i > 0; task.Passed != pass {
			t.Fatalf("shop started with %q: passed %t, feedback %q", start, task.Passed, task.Feedback)
		}
		b.run("pkill -x tinyhttp; for i in $(seq 50); do ss -tln | grep -q ':8080 ' || exit 0; sleep 0.1; done; exit 1", true)
	}
}

// TestBundledTextLabNamesNoCount: lab 2's feedback on a wrong 404.txt says
// what is wrong, not how many lines the answer has.
func TestBundledTextLabNamesNoCount(t *testing.T) {
	t.Parallel()
	b := startBundled(t, bundledEnv(t), "text-processing-lab")
	want := strings.TrimSpace(b.run("awk '$9 == 404' /srv/weblog/access.log | wc -l", false))
	for _, wrong := range []string{"grep ' 404 ' /srv/weblog/access.log | head -n 2", "grep ' 404 ' /srv/weblog/access.log | tac",
		"cat /srv/weblog/access.log"} {
		b.run("mkdir -p ~/report && "+wrong+" > ~/report/404.txt", false)
		task := b.check().Tasks[0]
		if task.Passed || len(task.Feedback) != 1 || regexp.MustCompile(`\b`+want+`\b`).MatchString(task.Feedback[0]) {
			t.Errorf("404.txt from %q: passed %t, feedback %q (the answer has %s lines)", wrong, task.Passed, task.Feedback, want)
		}
	}
}
