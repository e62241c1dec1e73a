package httpapi_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// oneTaskLab creates a lab on the BusyBox template whose one task runs check.
func oneTaskLab(t *testing.T, e *apitest.Env, admin *apitest.User, slug, check string) int64 {
	t.Helper()
	apitest.RegisterSecret(check, "the check of "+slug)
	return createLab(t, e, admin, fmt.Sprintf("slug=%s&title=%s&template_id=%d&time_limit_minutes=30", slug, slug, busyboxTemplate(t, e)),
		map[string]any{"tasks": []map[string]any{{"title": "The task", "check": check}}})
}

// labPath is the path of a learner's action on lab id.
func labPath(id int64, action string) string {
	return fmt.Sprintf("/api/laboratories/%d/%s", id, action)
}

// startLab starts lab id as token's learner; its sandbox goes when the test ends.
func startLab(t *testing.T, e *apitest.Env, token string, id int64) labAttemptBody {
	t.Helper()
	var at labAttemptBody
	e.Do(apitest.Request{Method: "POST", Path: labPath(id, "start"), Token: token}).Expect(t, 201).JSON(t, &at)
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *at.ContainerID) })
	return at
}

// TestLabsInARowWithinDefaultQuotas: with the default sandbox quotas (three
// sandboxes, two running) and a lesson sandbox of their own running, a
// learner goes through five laboratories one after the other without
// deleting a sandbox: a submitted attempt's sandbox is removed at once (and
// the answer says so), and one left to run out is removed when the next
// laboratory starts.
func TestLabsInARowWithinDefaultQuotas(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		if e.Config.SandboxMaxPerUser != 3 || e.Config.SandboxMaxRunningPerUser != 2 {
			t.Fatalf("quotas %d/%d, want the defaults 3/2", e.Config.SandboxMaxPerUser, e.Config.SandboxMaxRunningPerUser)
		}
		admin, alice := rootAndAlice(e)
		createSandbox(t, e, alice.Token, busyboxTemplate(t, e)) // the lesson's sandbox, running throughout
		labs := make([]int64, 5)
		for i := range labs {
			labs[i] = oneTaskLab(t, e, admin, "row-"+strconv.Itoa(i), "#!/bin/sh\n# lab-check-secret-row\n[ -f /home/learner/done ] || { echo 'FAIL: not done'; exit 1; }\n")
		}
		var abandoned labAttemptBody
		for i, id := range labs {
			at := startLab(t, e, alice.Token, id)
			mine := listSandboxes(t, e, alice.Token)
			if len(mine) != 2 {
				t.Fatalf("lab %d: %d sandboxes, want the lesson's and this lab's", i, len(mine))
			}
			if i == 2 {
				// Left to run out: the next start removes its sandbox.
				if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE lab_attempts SET expires_at = started_at WHERE id = $1`, at.ID); err != nil {
					t.Fatal(err)
				}
				abandoned = at
				continue
			}
			if res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), *at.ContainerID,
				sandbox.Script{Text: "touch ~/done"}); err != nil || !res.OK() {
				t.Fatalf("solving lab %d: %v %+v", i, err, res)
			}
			var done labAttemptBody
			e.Do(apitest.Request{Method: "POST", Path: labPath(id, "submit"), Token: alice.Token}).Expect(t, 200).JSON(t, &done)
			if done.Status != "submitted" || done.Score != 100 || done.ContainerID != nil || done.SandboxRemovedAt == nil {
				t.Fatalf("lab %d submitted: %+v", i, done)
			}
			e.Get(fmt.Sprintf("/api/containers/%d", *at.ContainerID), alice.Token).Expect(t, 404)
		}
		var ended labAttemptBody
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", abandoned.ID), alice.Token).Expect(t, 200).JSON(t, &ended)
		if ended.Status != "expired" || ended.ContainerID != nil || ended.SandboxRemovedAt == nil {
			t.Fatalf("the attempt left to run out: %+v", ended)
		}
		e.Get(fmt.Sprintf("/api/containers/%d", *abandoned.ContainerID), alice.Token).Expect(t, 404)
	})
}

// TestLabAttemptsPerDay: a learner starts one laboratory at most
// TUXLAB_LAB_ATTEMPTS_PER_DAY times in 24 hours (429 with Retry-After and a
// clear detail past it, nothing created); starts older than a day no longer
// count, and another laboratory has its own count.
func TestLabAttemptsPerDay(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		check := "#!/bin/sh\n# lab-check-secret-daily\nexit 1\n"
		id := oneTaskLab(t, e, admin, "daily", check)
		other := oneTaskLab(t, e, admin, "daily-other", check)
		for range 2 {
			startLab(t, e, alice.Token, id)
			e.Do(apitest.Request{Method: "POST", Path: labPath(id, "submit"), Token: alice.Token}).Expect(t, 200)
		}
		r := e.Do(apitest.Request{Method: "POST", Path: labPath(id, "start"), Token: alice.Token}).Expect(t, 429)
		if wait, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || wait < 1 || wait > 24*3600 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
		if !strings.Contains(r.Detail(), "2 times in the last 24 hours") {
			t.Fatalf("detail %q", r.Detail())
		}
		if n, err := e.DB.Labs().CountAttempts(context.Background(), id); err != nil || n != 2 {
			t.Fatalf("%d attempts after a refused start (%v)", n, err)
		}
		startLab(t, e, alice.Token, other)
		// A day later the first starts no longer count.
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE lab_attempts SET started_at = $1 WHERE lab_id = $2`,
			time.Now().Add(-25*time.Hour).UTC(), id); err != nil {
			t.Fatal(err)
		}
		startLab(t, e, alice.Token, id)
	}, func(c *config.Config) { c.LabAttemptsPerDay = 2 })
}

// TestLabChecksNeverOverlap: while a check of an attempt runs, another check
// (on this replica or another) and a submit are refused with 429 and
// Retry-After, however long ago it started; the interval to the next check
// counts from the end of the last one. The clock is pinned, so what the
// test reads is the rule, not how fast the machine is.
func TestLabChecksNeverOverlap(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		const interval = 10 * time.Second
		clock := newClock()
		e = e.Replica(withClock(clock))
		other := e.Replica()
		admin, alice := rootAndAlice(e)
		// The check waits while /tmp/hold exists, so the test decides when it ends.
		id := oneTaskLab(t, e, admin, "slow", "#!/bin/sh\n# lab-check-secret-slow\n"+
			"if [ -f /tmp/hold ]; then touch /tmp/running; while [ -f /tmp/hold ]; do sleep 1; done; fi\nexit 0\n")
		at := startLab(t, e, alice.Token, id)
		root := func(script string) string {
			t.Helper()
			res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), *at.ContainerID, sandbox.Script{Text: script, AsRoot: true})
			if err != nil {
				t.Fatal(err)
			}
			return res.Stdout
		}
		root("touch /tmp/hold")
		check := apitest.Request{Method: "POST", Path: labPath(id, "check"), Token: alice.Token}
		type answer struct {
			r   *apitest.Response
			err error
		}
		first := make(chan answer, 1)
		go func() {
			r, err := e.Send(check)
			first <- answer{r, err}
		}()
		eventually(t, 30*time.Second, "the first check to run", func() bool { return root("[ -f /tmp/running ] && echo yes") == "yes\n" })

		// Long after the first check started, while it still runs.
		clock.advance(3 * interval)
		for _, env := range []*apitest.Env{e, other} {
			r := env.Do(check).Expect(t, 429)
			if r.Header.Get("Retry-After") == "" || !strings.Contains(r.Detail(), "running") {
				t.Fatalf("a check while one runs: %s (Retry-After %q)", r.Body, r.Header.Get("Retry-After"))
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: labPath(id, "submit"), Token: alice.Token}).Expect(t, 429)
		var running labAttemptBody
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &running)
		if !running.Checking || running.Checks != 1 {
			t.Fatalf("while checking: %+v", running)
		}

		root("rm /tmp/hold /tmp/running")
		var done labAttemptBody
		a := <-first
		if a.err != nil {
			t.Fatal(a.err)
		}
		a.r.Expect(t, 200).JSON(t, &done)
		if done.Checking || !done.Tasks[0].Passed {
			t.Fatalf("the first check: %+v", done)
		}
		// The interval counts from the check's end, not its start.
		if r := e.Do(check).Expect(t, 429); !strings.Contains(r.Detail(), "Checked a moment ago") {
			t.Fatalf("right after a check ended: %s", r.Body)
		}
		clock.advance(interval)
		e.Do(check).Expect(t, 200)
	}, func(c *config.Config) { c.LabCheckInterval, c.CheckTimeout = 10*time.Second, 30*time.Second })
}

// TestLabCheckIsBounded: a whole check, every task of it, is bounded in wall
// time (TUXLAB_LAB_CHECK_BUDGET: tasks left when it is spent fail as not
// checked) and in the output it keeps, and its scripts run at nice 10.
func TestLabCheckIsBounded(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		flood := "#!/bin/sh\n# lab-check-secret-bounded-flood\necho nice=$(cut -d' ' -f19 /proc/$$/stat)\n" +
			"head -c 100000 /dev/zero | tr '\\0' o\necho\nhead -c 100000 /dev/zero | tr '\\0' e >&2\necho 'FAIL: flooded'\nexit 1\n"
		hang := "#!/bin/sh\n# lab-check-secret-bounded-hang\nsleep 600\n"
		pass := "#!/bin/sh\n# lab-check-secret-bounded-pass\nexit 0\n"
		var tasks []map[string]any
		for i, c := range []string{flood, flood, flood, flood, flood, hang, hang, pass} {
			apitest.RegisterSecret(c, "a bounded check")
			tasks = append(tasks, map[string]any{"title": fmt.Sprintf("Task %d", i), "check": c})
		}
		id := createLab(t, e, admin, fmt.Sprintf("slug=bounded&title=Bounded&template_id=%d", busyboxTemplate(t, e)), map[string]any{"tasks": tasks})
		at := startLab(t, e, alice.Token, id)
		var checked labAttemptBody
		e.Do(apitest.Request{Method: "POST", Path: labPath(id, "check"), Token: alice.Token}).Expect(t, 200).JSON(t, &checked)
		last := checked.Tasks[len(checked.Tasks)-1]
		if last.Passed || len(last.Feedback) != 1 || !strings.HasPrefix(last.Feedback[0], "Not checked") {
			t.Fatalf("the task after two hanging checks, past the budget: %+v", last)
		}
		if f := checked.Tasks[0].Feedback; len(f) != 1 || f[0] != "flooded" {
			t.Fatalf("a flooding task's feedback: %q", f)
		}
		var full labAttemptBody
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), admin.Token).Expect(t, 200).JSON(t, &full)
		if out := *full.Tasks[0].Output; !strings.Contains(out, "nice=10\n") {
			t.Fatalf("the check did not run at nice 10: %.200q", out)
		}
		kept := 0
		for _, task := range full.Tasks {
			kept += len(*task.Output)
		}
		if kept > 72<<10 {
			t.Fatalf("a check kept %d bytes of output", kept)
		}
	}, func(c *config.Config) { c.CheckTimeout, c.LabCheckBudget = 2*time.Second, 3*time.Second })
}
