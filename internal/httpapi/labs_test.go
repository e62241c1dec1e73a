package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

type labAttemptBody struct {
	ID          int64   `json:"id"`
	Status      string  `json:"status"`
	ContainerID *int64  `json:"container_id"`
	TerminalURL *string `json:"terminal_url"`
	Score       int     `json:"score"`
	Points      int     `json:"points"`
	MaxPoints   int     `json:"max_points"`
	Passed      bool    `json:"passed"`
	Checks      int     `json:"checks"`
	Checking    bool    `json:"checking"`
	// When the lab removed the sandbox of the ended attempt.
	SandboxRemovedAt *string `json:"sandbox_removed_at"`
	Tasks            []struct {
		Title    string   `json:"title"`
		Passed   bool     `json:"passed"`
		Points   int      `json:"points"`
		Feedback []string `json:"feedback"`
		Output   *string  `json:"output"`
		TimedOut *bool    `json:"timed_out"`
	} `json:"tasks"`
}

// The fixture lab's scripts; each carries a marker the leak watch looks for.
var (
	labSetupSecret = "#!/bin/sh\n# lab-setup-secret-5c1d\nset -e\necho prepared > /tmp/setup-marker\nchmod 600 /tmp/setup-marker\n"
	labHelloCheck  = "#!/bin/sh\n# lab-check-secret-hello\nf=/home/learner/hello.txt\n[ -f $f ] || { echo \"FAIL: $f does not exist\"; exit 1; }\n" +
		"grep -qx 'hello tuxlab' $f || { echo \"FAIL: $f does not say hello tuxlab\"; echo debug-only-line; exit 1; }\n"
	labSetupCheck = "#!/bin/sh\n# lab-check-secret-setup\n[ \"$(cat /tmp/setup-marker)\" = prepared ] || { echo 'FAIL: the setup did not run'; exit 1; }\n" +
		"[ \"$TUXLAB_USER\" = learner ] && [ \"$(id -u)\" = 0 ] || { echo 'FAIL: checks run as root with TUXLAB_USER'; exit 1; }\n"
	labDirCheck = "#!/bin/sh\n# lab-check-secret-dir\n[ -d /home/learner/projects ] || { echo 'FAIL: there is no projects directory in your home'; exit 1; }\n"
	labSolution = "#!/bin/sh\n# lab-solution-secret-2e8f\necho 'hello tuxlab' > ~/hello.txt\nmkdir -p ~/projects\n"
)

func fixtureLabBody() map[string]any {
	for what, s := range map[string]string{"a setup script": labSetupSecret, "a check script": labHelloCheck,
		"another check script": labSetupCheck, "a third check script": labDirCheck, "a solution": labSolution} {
		apitest.RegisterSecret(s, what)
	}
	return map[string]any{
		"description": "Say hello from your sandbox.",
		"setup":       labSetupSecret,
		"solution":    labSolution,
		"tasks": []map[string]any{
			{"title": "Write hello.txt", "description": "Put `hello tuxlab` in ~/hello.txt.", "hint": "echo and >", "points": 2, "check": labHelloCheck},
			{"title": "The setup ran", "check": labSetupCheck},
			{"title": "Make a projects directory", "hint": "mkdir", "check": labDirCheck},
		},
	}
}

func createLab(t *testing.T, e *apitest.Env, admin *apitest.User, query string, body any) int64 {
	t.Helper()
	var l struct{ ID int64 }
	post(e, admin.Token, "/api/admin/laboratories?"+query, body).Expect(t, 201).JSON(t, &l)
	return l.ID
}

// TestLabEndToEnd starts a lab, solves part of it through the terminal as a
// learner would, checks, solves the rest, submits and reads the results.
func TestLabEndToEnd(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		mod := loadFixture(t, e)["shell"]
		labID := createLab(t, e, admin, fmt.Sprintf("slug=hello-lab&title=Hello&module_id=%d&template_id=%d&time_limit_minutes=30", mod, busyboxTemplate(t, e)), fixtureLabBody())

		// Public and section views: tasks with hints, never a script.
		var pub struct {
			ID        int64 `json:"id"`
			SectionID int64 `json:"section_id"`
			Tasks     []struct {
				Title string `json:"title"`
				Hint  string `json:"hint"`
			} `json:"tasks"`
		}
		e.Get(fmt.Sprintf("/api/laboratories/%d", labID), "").Expect(t, 200).JSON(t, &pub)
		if pub.SectionID != mod || len(pub.Tasks) != 3 || pub.Tasks[0].Hint != "echo and >" {
			t.Fatalf("public lab %+v", pub)
		}
		e.Get(fmt.Sprintf("/api/laboratories/section/%d/laboratory", mod), alice.Token).Expect(t, 200)
		e.Get("/api/laboratories", "").Expect(t, 200)
		e.Get("/api/laboratories/99999", "").Expect(t, 404)
		e.Get("/api/laboratories/section/99999/laboratory", alice.Token).Expect(t, 404)

		// Start: a sandbox is provisioned and the setup ran in it.
		var at labAttemptBody
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", labID), nil).Expect(t, 201).JSON(t, &at)
		if at.Status != "in_progress" || at.ContainerID == nil || at.TerminalURL == nil || at.MaxPoints != 4 {
			t.Fatalf("attempt %+v", at)
		}
		t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *at.ContainerID) })
		var clash struct {
			AttemptID int64 `json:"attempt_id"`
		}
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", labID), nil).Expect(t, 409).JSON(t, &clash)
		if clash.AttemptID != at.ID {
			t.Fatalf("409 names %d, want %d", clash.AttemptID, at.ID)
		}
		post(e, bob.Token, fmt.Sprintf("/api/laboratories/%d/check", labID), nil).Expect(t, 409)
		e.Get(fmt.Sprintf("/api/containers/%d", *at.ContainerID), bob.Token).Expect(t, 404)

		// Solve the first task as a learner would: in the terminal.
		tc := e.OpenTerminal(t, terminalPath(*at.ContainerID), alice.Token, 80, 24)
		tc.Exchange("echo 'hello tuxlab' > ~/hello.txt && echo written-$((40+2))\n", "written-42")

		var checked labAttemptBody
		check := fmt.Sprintf("/api/laboratories/%d/check", labID)
		post(e, alice.Token, check, nil).Expect(t, 200).JSON(t, &checked)
		if checked.Status != "in_progress" || checked.Checks != 1 || len(checked.Tasks) != 3 {
			t.Fatalf("check %+v", checked)
		}
		if !checked.Tasks[0].Passed || !checked.Tasks[1].Passed || checked.Tasks[2].Passed {
			t.Fatalf("after the first task: %+v", checked.Tasks)
		}
		if got := checked.Tasks[2].Feedback; len(got) != 1 || got[0] != "there is no projects directory in your home" {
			t.Fatalf("feedback %q", got)
		}
		if checked.Tasks[2].Output != nil {
			t.Fatal("a learner sees a check's output")
		}
		// The rate limit.
		r := post(e, alice.Token, check, nil).Expect(t, 429)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}

		// The rest, then submit: graded once.
		tc.Exchange("mkdir -p ~/projects && echo made-$((6*7))\n", "made-42")
		var done labAttemptBody
		submit := fmt.Sprintf("/api/laboratories/%d/submit", labID)
		post(e, alice.Token, submit, nil).Expect(t, 200).JSON(t, &done)
		if done.Status != "submitted" || done.Points != 4 || done.Score != 100 || !done.Passed {
			t.Fatalf("submitted %+v", done)
		}
		post(e, alice.Token, submit, nil).Expect(t, 409)
		results := fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID)
		e.Get(results, alice.Token).Expect(t, 200).JSON(t, &done)
		if done.Score != 100 || done.Status != "submitted" {
			t.Fatalf("results %+v", done)
		}
		e.Get(results, bob.Token).Expect(t, 404)
		var full labAttemptBody
		e.Get(results, admin.Token).Expect(t, 200).JSON(t, &full)
		if full.Tasks[0].Output == nil || !strings.Contains(*full.Tasks[0].Output, "exit code 0") {
			t.Fatalf("an admin sees no output: %+v", full.Tasks[0])
		}
	}, func(c *config.Config) { c.LabCheckInterval = time.Hour })
}

// TestLabChecksFailHangAndFlood: an unsolved task fails with its FAIL: line,
// a check that hangs is cut off at its timeout, a check printing 10 MB is
// capped, and two concurrent submits grade once.
func TestLabChecksFailHangAndFlood(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.CheckTimeout = 2 * time.Second; c.LabCheckInterval = time.Millisecond })
	admin, alice := rootAndAlice(e)
	hang := "#!/bin/sh\n# lab-check-secret-hang\nsleep 600\n"
	flood := "#!/bin/sh\n# lab-check-secret-flood\nhead -c 10000000 /dev/zero | tr '\\0' x\necho\necho 'FAIL: flooded'\nexit 1\n"
	apitest.RegisterSecret(hang, "a hanging check")
	apitest.RegisterSecret(flood, "a flooding check")
	body := fixtureLabBody()
	body["tasks"] = append(body["tasks"].([]map[string]any),
		map[string]any{"title": "Hang", "check": hang}, map[string]any{"title": "Flood", "check": flood})
	labID := createLab(t, e, admin, fmt.Sprintf("slug=hard-lab&title=Hard&template_id=%d", busyboxTemplate(t, e)), body)

	at := startLab(t, e, alice.Token, labID)

	var checked labAttemptBody
	post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/check", labID), nil).Expect(t, 200).JSON(t, &checked)
	tasks := checked.Tasks
	if tasks[0].Passed || len(tasks[0].Feedback) != 1 || tasks[0].Feedback[0] != "/home/learner/hello.txt does not exist" {
		t.Fatalf("unsolved task %+v", tasks[0])
	}
	if tasks[3].Passed || tasks[3].Feedback[0] != "The check took too long and was stopped" {
		t.Fatalf("hanging check %+v", tasks[3])
	}
	if tasks[4].Passed || tasks[4].Feedback[0] != "flooded" {
		t.Fatalf("flooding check %+v", tasks[4])
	}
	// Nothing of the hanging check lives on in the sandbox.
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), *at.ContainerID,
		sandbox.Script{Text: "ps -o args | grep -c '[s]leep 600'", AsRoot: true})
	if err != nil || strings.TrimSpace(res.Stdout) != "0" {
		t.Fatalf("the hanging check survives its timeout: %q %v", res.Stdout, err)
	}

	// The admin's view: the flood capped, the hang marked.
	var full labAttemptBody
	e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), admin.Token).Expect(t, 200).JSON(t, &full)
	if out := *full.Tasks[4].Output; len(out) > 40<<10 || !strings.Contains(out, "output capped") {
		t.Fatalf("flood output %d bytes, capped marker: %t", len(out), strings.Contains(out, "output capped"))
	}
	if !*full.Tasks[3].TimedOut {
		t.Fatal("hang not marked as timed out")
	}

	// Two submits at once: one grades, the other is refused.
	submit := apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/laboratories/%d/submit", labID), Token: alice.Token}
	statuses := statusesOf(e.DoConcurrently([]apitest.Request{submit, submit}))
	if !(statuses[0] == 200 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 200) {
		t.Fatalf("concurrent submits answered %v", statuses)
	}
}

func TestLabDeadlineQuotaAndAuthoring(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		tpl := busyboxTemplate(t, e)

		// A YAML body; updates keep task ids by position.
		yamlBody := "description: YAML lab\ntasks:\n  - title: One\n    check: |\n      # lab-check-secret-yaml\n      exit 1\n"
		apitest.RegisterSecret("# lab-check-secret-yaml\nexit 1", "a YAML check")
		var l struct {
			ID    int64 `json:"id"`
			Tasks []struct {
				ID    int64  `json:"id"`
				Check string `json:"check"`
			} `json:"tasks"`
		}
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/laboratories?slug=yaml-lab&title=YAML&template_id=%d&time_limit_minutes=10", tpl),
			Token: admin.Token, Body: yamlBody, Header: http.Header{"Content-Type": {"application/yaml"}}}).Expect(t, 201).JSON(t, &l)
		if len(l.Tasks) != 1 || !strings.Contains(l.Tasks[0].Check, "exit 1") {
			t.Fatalf("created %+v", l)
		}
		first := l.Tasks[0].ID
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/laboratories/%d?title=Renamed", l.ID), Token: admin.Token,
			Body: map[string]any{"tasks": []map[string]any{{"title": "One", "check": "exit 1"}, {"title": "Two", "check": "exit 0"}}}}).Expect(t, 200).JSON(t, &l)
		if len(l.Tasks) != 2 || l.Tasks[0].ID != first {
			t.Fatalf("updated %+v (first task id was %d)", l, first)
		}
		e.Get("/api/admin/laboratories", admin.Token).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/admin/laboratories/%d", l.ID), admin.Token).Expect(t, 200)
		for _, bad := range []string{"slug=x&title=x", "slug=x&title=x&template_id=99999", "slug=Bad+Slug&title=x&template_id=1&passing_score=101"} {
			e.Do(apitest.Request{Method: "POST", Path: "/api/admin/laboratories?" + bad, Token: admin.Token,
				Body: map[string]any{"tasks": []map[string]any{{"title": "t"}}}}).Expect(t, 422)
		}
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/laboratories?slug=yaml-lab&title=x&template_id=%d", tpl), Token: admin.Token,
			Body: map[string]any{"tasks": []map[string]any{{"title": "t", "check": "true"}}}}).Expect(t, 409)
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/admin/laboratories?slug=z&title=z&template_id=%d", tpl), Token: alice.Token,
			Body: map[string]any{"tasks": []map[string]any{{"title": "t", "check": "true"}}}}).Expect(t, 403)
		e.Get(fmt.Sprintf("/api/admin/laboratories/%d", l.ID), alice.Token).Expect(t, 403)

		// The template is in use by the lab: it cannot be deleted from under it.
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/sandbox-templates/%d", tpl), Token: admin.Token}).Expect(t, 409)

		// A submit after the deadline is refused and ends the attempt as expired.
		var at labAttemptBody
		post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", l.ID), nil).Expect(t, 201).JSON(t, &at)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE lab_attempts SET expires_at = started_at WHERE id = $1`, at.ID); err != nil {
			t.Fatal(err)
		}
		if r := post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/submit", l.ID), nil).Expect(t, 409); !strings.Contains(r.Detail(), "time limit") {
			t.Fatalf("late submit: %s", r.Body)
		}
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &at)
		if at.Status != "expired" || at.ContainerID != nil || at.SandboxRemovedAt == nil {
			t.Fatalf("late attempt: %+v", at)
		}

		// The learner's sandbox quota holds for labs too: nothing is left behind.
		createSandbox(t, e, alice.Token, tpl)
		if r := post(e, alice.Token, fmt.Sprintf("/api/laboratories/%d/start", l.ID), nil).Expect(t, 409); !strings.Contains(r.Detail(), "quota") {
			t.Fatalf("start past the quota: %s", r.Body)
		}
		if n, err := e.DB.Labs().CountAttempts(context.Background(), l.ID); err != nil || n != 1 {
			t.Fatalf("%d attempts after a refused start (%v)", n, err)
		}

		// Delete with attempts needs cascade.
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/laboratories/%d", l.ID), Token: admin.Token}).Expect(t, 409)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/laboratories/%d?cascade=true", l.ID), Token: admin.Token}).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/laboratories/%d", l.ID), "").Expect(t, 404)
	}, func(c *config.Config) { c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser = 1, 1 })
}

// TestSandboxExecSeam: scripts run without a TTY, stdout and stderr apart,
// as root or as the learner, only in the caller's own running sandbox.
func TestSandboxExecSeam(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	alice := e.CreateUser("alice", auth.RoleStudent)
	bob := e.CreateUser("bob", auth.RoleStudent)
	c := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
	ctx := context.Background()
	run := func(a actor.Actor, sc sandbox.Script) (*sandbox.Result, error) {
		return e.App.Sandboxes.Exec(ctx, a, c.ID, sc)
	}
	owner := actor.User(alice.ID)
	cases := []struct {
		name           string
		script         sandbox.Script
		code           int
		stdout, stderr string
	}{
		{"streams apart", sandbox.Script{Text: "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n"},
		{"as the learner, in the home", sandbox.Script{Text: "#!/bin/sh\necho $(id -un) $PWD $TUXLAB_USER $HOME"}, 0, "learner /home/learner learner /home/learner\n", ""},
		{"as root", sandbox.Script{Text: "id -u; [ -t 0 ] || echo no-tty", AsRoot: true}, 0, "0\nno-tty\n", ""},
		{"stdin is the script", sandbox.Script{Text: "read -r x || echo eof"}, 0, "eof\n", ""},
	}
	for _, tc := range cases {
		res, err := run(owner, tc.script)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.ExitCode != tc.code || res.Stdout != tc.stdout || res.Stderr != tc.stderr || res.TimedOut {
			t.Fatalf("%s: %+v", tc.name, res)
		}
	}
	if _, err := run(actor.User(bob.ID), sandbox.Script{Text: "true"}); !errors.Is(err, sandbox.ErrContainerNotFound) {
		t.Fatalf("another user's sandbox: %v", err)
	}
	if _, err := run(owner, sandbox.Script{Text: strings.Repeat("#", sandbox.MaxScriptBytes+1)}); err == nil {
		t.Fatal("an oversized script ran")
	}
	stopSandbox(t, e, alice.Token, c.ID)
	if _, err := run(owner, sandbox.Script{Text: "true"}); !errors.Is(err, sandbox.ErrNotRunning) {
		t.Fatalf("a stopped sandbox: %v", err)
	}
}

// TestSandboxKeepAliveIsOutOfReach: the learner cannot end the sandbox with
// kill 1, root's SIGTERM leaves it running as it leaves a server running, and
// the keep-alive shows as tuxlab-idle without a sleep of its own.
func TestSandboxKeepAliveIsOutOfReach(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	alice := e.CreateUser("alice", auth.RoleStudent)
	c := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
	run := func(sc sandbox.Script) *sandbox.Result {
		t.Helper()
		return execIn(t, e, alice.ID, c.ID, sc)
	}
	if res := run(sandbox.Script{Text: "kill 1 2>&1; echo rc=$?"}); !strings.Contains(res.Stdout, "rc=1") {
		t.Fatalf("kill 1 as the learner: %q", res.Stdout)
	}
	if res := run(sandbox.Script{Text: "ps -o comm | sort | uniq | tr '\\n' ' '"}); !strings.Contains(res.Stdout, "tuxlab-idle") || strings.Contains(res.Stdout, "sleep") {
		t.Fatalf("processes of a fresh sandbox: %q", res.Stdout)
	}
	run(sandbox.Script{Text: "kill -TERM 1; kill -TERM $(pidof tuxlab-idle); kill -HUP 1; true", AsRoot: true})
	// Had PID 1 ended, this exec would end with it.
	if res := run(sandbox.Script{Text: "sleep 1; echo alive"}); res.Stdout != "alive\n" {
		t.Fatalf("after root's SIGTERM: %+v", res)
	}
	var got containerBody
	e.Get(fmt.Sprintf("/api/containers/%d", c.ID), alice.Token).Expect(t, 200).JSON(t, &got)
	if got.Status != "running" {
		t.Fatalf("after root's SIGTERM the sandbox is %s (%s)", got.Status, got.StatusDetail)
	}
	// A stop still works: the engine sends SIGRTMIN+3.
	post(e, alice.Token, fmt.Sprintf("/api/containers/%d/stop", c.ID), nil).Expect(t, 200).JSON(t, &got)
	if got.Status != "stopped" {
		t.Fatalf("after stop: %s", got.Status)
	}
}
