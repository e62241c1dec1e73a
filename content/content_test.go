package content_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/attempt"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// TestBundledContentShape holds the bundled labs and exams to the curriculum's
// promise: a laboratory per module, each with at least three tasks and a
// solution, and at least four exams that mix every kind of question.
func TestBundledContentShape(t *testing.T) {
	t.Parallel()
	fsys := content.Curriculum()
	c, err := lesson.ReadCurriculum(fsys)
	if err != nil {
		t.Fatal(err)
	}
	labs, err := lab.ReadFiles(fsys)
	if err != nil {
		t.Fatal(err)
	}
	byModule := map[string]*lab.File{}
	for _, l := range labs {
		byModule[l.Module] = l
		if len(l.Tasks) < 3 || !hasSolution(l) || l.Template != "Debian" && l.Template != sandbox.MachineTemplateName {
			t.Errorf("%s: %d tasks, solution %t, template %q", l.Path, len(l.Tasks), hasSolution(l), l.Template)
		}
		for _, task := range l.Tasks {
			if task.Hint == "" || task.Description == "" {
				t.Errorf("%s: task %q needs a description and a hint", l.Path, task.Title)
			}
		}
	}
	for _, m := range c.Modules {
		if byModule[m.Slug] == nil {
			t.Errorf("module %s has no laboratory", m.Slug)
		}
	}
	exams, err := exam.ReadFiles(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(exams) < 4 {
		t.Errorf("%d bundled exams, want 4 or more", len(exams))
	}
	for _, e := range exams {
		kinds := map[exam.Kind]int{}
		for _, q := range e.Questions {
			kinds[q.Kind]++
			if q.Kind == exam.Practical && strings.TrimSpace(q.Solution) == "" {
				t.Errorf("%s: a practical question without a solution: %.60q", e.Path, q.Prompt)
			}
			if q.Explanation == "" {
				t.Errorf("%s: a question without an explanation: %.60q", e.Path, q.Prompt)
			}
		}
		for _, k := range exam.Kinds {
			if kinds[k] == 0 {
				t.Errorf("%s has no %s question", e.Path, k)
			}
		}
	}
	if _, err := fs.Stat(fsys, "exams"); err != nil {
		t.Error(err)
	}
}

// TestBundledChecksProvenBothWays runs every bundled laboratory the way a
// learner meets it, on the image it targets: started (setup included), every
// check fails on the fresh sandbox with a FAIL: reason, the solution runs as
// the learner, every check passes, and the submission passes. Every practical
// exam question is proven the same way.
func TestBundledChecksProvenBothWays(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite", func(c *config.Config) {
		c.BundledCurriculum = true
		c.LabCheckInterval = time.Millisecond
		c.SandboxMaxRunning, c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser = 100, 100, 100
		// Machines under TCG on CI's two cores, several at once, run a check
		// in seconds to tens of seconds; the default (10 s) is for a host
		// that is not running this suite beside them.
		c.CheckTimeout = time.Minute
	})
	ctx := context.Background()
	labs, err := e.App.Labs.Labs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exams, err := e.App.Exams.Exams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(labs) == 0 || len(exams) == 0 {
		t.Fatalf("%d labs and %d exams loaded", len(labs), len(exams))
	}
	// Three sandboxes at a time: enough to use the machine, few enough not to
	// starve it (and each check of its time limit).
	slots := make(chan struct{}, 3)
	var wg sync.WaitGroup
	// Learners are made here, in the test's goroutine; each proof then runs as
	// a subtest, which reports through its own goroutine.
	for i, l := range labs {
		u := e.CreateUser(fmt.Sprintf("learner%d", i), auth.RoleStudent)
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run("lab/"+l.Slug, func(t *testing.T) { proveLab(t, e, u, l) })
		}()
	}
	for i, x := range exams {
		if !x.HasPractical() {
			continue
		}
		u := e.CreateUser(fmt.Sprintf("examinee%d", i), auth.RoleStudent)
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run("exam/"+x.Slug, func(t *testing.T) { proveExam(t, e, u, x) })
		}()
	}
	wg.Wait()
}

func proveLab(t *testing.T, e *apitest.Env, u *apitest.User, l *lab.Lab) {
	ctx := context.Background()
	requireTemplate(t, e, l.TemplateID)
	a := actor.User(u.ID)
	at, err := e.App.Labs.Start(ctx, a, l.ID)
	if err != nil {
		t.Fatalf("start (with its setup): %v", err)
	}
	t.Cleanup(func() {
		for _, m := range at.Machines {
			if m.ContainerID != nil && *m.ContainerID != *at.ContainerID {
				e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *m.ContainerID)
			}
		}
		e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *at.ContainerID)
	})

	fresh, err := e.App.Labs.Check(ctx, a, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range fresh.Results {
		if r.Passed || len(r.Feedback) == 0 || r.Feedback[0] == "Not done yet" || r.TimedOut {
			t.Errorf("task %d %q on a fresh sandbox: passed %t, feedback %q, timed out %t\n%s", i, r.Title, r.Passed, r.Feedback, r.TimedOut, r.Output)
		}
	}
	for _, s := range solutions(l.Solution, l.Machines, at.ContainerID, at.Machines) {
		c, err := e.App.Sandboxes.Get(ctx, a, s.containerID)
		if err != nil {
			t.Fatal(err)
		}
		ran, err := e.App.Sandboxes.ExecIn(ctx, c, sandbox.Script{Text: s.text, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("solution of %s: %v", s.where, err)
		}
		if !ran[0].OK() {
			t.Fatalf("solution of %s: %s", s.where, ran[0].Transcript())
		}
	}
	done, err := e.App.Labs.Submit(ctx, a, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range done.Results {
		if !r.Passed {
			t.Errorf("task %d %q after the solution: feedback %q\n%s", i, r.Title, r.Feedback, r.Output)
		}
	}
	if done.Status != attempt.Submitted || done.Score != 100 || !done.Passed {
		t.Errorf("submission: status %s, score %d, passed %t", done.Status, done.Score, done.Passed)
	}
}

func proveExam(t *testing.T, e *apitest.Env, u *apitest.User, x *exam.Exam) {
	ctx := context.Background()
	requireTemplate(t, e, *x.TemplateID)
	a := actor.User(u.ID)
	c, err := e.App.Sandboxes.Create(ctx, a, sandbox.NewContainer{TemplateID: *x.TemplateID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID) })
	var practical []*exam.Question
	var checks []sandbox.Script
	for _, q := range x.Questions {
		if q.Kind == exam.Practical {
			practical = append(practical, q)
			checks = append(checks, sandbox.Script{Text: q.Key.Check, AsRoot: true})
		}
	}
	// All checks in one go, as grading runs them (after the tampering check).
	checkAll := func() []*sandbox.Result {
		ran, err := e.App.Sandboxes.CheckIn(ctx, c, checks...)
		if err != nil {
			t.Fatal(err)
		}
		return ran
	}
	for i, res := range checkAll() {
		if res.OK() || len(res.Failures) == 0 {
			t.Errorf("question %d on a fresh sandbox: %s", practical[i].Position, res.Transcript())
		}
	}
	for _, q := range practical {
		ran, err := e.App.Sandboxes.ExecIn(ctx, c, sandbox.Script{Text: q.Key.Solution, Timeout: time.Minute})
		if err != nil {
			t.Fatalf("solution of question %d: %v", q.Position, err)
		}
		if !ran[0].OK() {
			t.Fatalf("solution of question %d: %s", q.Position, ran[0].Transcript())
		}
	}
	for i, res := range checkAll() {
		if !res.OK() {
			t.Errorf("question %d after its solution: %s", practical[i].Position, res.Transcript())
		}
	}
}

// TestBundledKeysAreSpread: the bundled exams' keys do not sit at one
// position of the authored options (issue 20: option 0 was the answer of 15
// of 17 single-choice questions and part of all 13 multiple-choice keys).
// Attempts show the options shuffled; the files are balanced all the same,
// for exports and any client that shows the authored order. No position is
// the answer of more than a third of the single-choice questions, and each
// position is in at most four fifths of the multiple-choice keys.
func TestBundledKeysAreSpread(t *testing.T) {
	t.Parallel()
	files, err := exam.ReadFiles(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	single, multi := map[int]int{}, map[int]int{}
	var singles, multis int
	for _, f := range files {
		for _, q := range f.Questions {
			switch q.Kind {
			case exam.SingleChoice:
				singles++
				single[*q.Answer]++
			case exam.MultipleChoice:
				multis++
				for _, a := range q.Answers {
					multi[a]++
				}
			}
		}
	}
	for pos, n := range single {
		if 3*n > singles {
			t.Errorf("option %d is the answer of %d of %d single-choice questions", pos, n, singles)
		}
	}
	for pos, n := range multi {
		if 5*n > 4*multis {
			t.Errorf("option %d is in %d of %d multiple-choice keys", pos, n, multis)
		}
	}
	t.Logf("single-choice keys by position %v of %d; multiple-choice keys holding each position %v of %d", single, singles, multi, multis)
}

// survivalCases say, per bundled exam with a practical question asking for a
// process that keeps running after the terminal closes, how to start that
// process in a terminal so that the hangup of its closing would end it
// (fragile), and so that it would not (sturdy); prepare runs as root first.
var survivalCases = map[string]struct{ prepare, fragile, sturdy string }{
	"processes-packages-services-logs-exam": {"", "nice -n 15 sleep 7200 &", "nohup nice -n 15 sleep 7200 >/dev/null 2>&1 &"},
	"network-storage-ssh-scheduling-exam": {"echo '127.0.0.1 api.test' >> /etc/hosts",
		"nc -lk 127.0.0.1 8080 &", "setsid nc -lk 127.0.0.1 8080 </dev/null >/dev/null 2>&1 &"},
}

// TestBundledSurvivalChecksAreStrict: a practical question that asks for a
// process to keep running after the terminal closes passes only for one that
// would survive the terminal's hangup. Started in a terminal with a plain &,
// the check fails saying so; started with nohup or setsid, it passes.
func TestBundledSurvivalChecksAreStrict(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum = true })
	exams, err := e.App.Exams.Exams(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, x := range exams {
		for _, q := range x.Questions {
			if q.Kind != exam.Practical || !strings.Contains(strings.Join(strings.Fields(q.Prompt), " "), "after your terminal") {
				continue
			}
			c, ok := survivalCases[x.Slug]
			if !ok {
				t.Errorf("%s question %d asks for a process that survives the terminal: add it to survivalCases", x.Slug, q.Position)
				continue
			}
			found++
			u := e.CreateUser(fmt.Sprintf("survivor%d", i), auth.RoleStudent)
			t.Run(x.Slug, func(t *testing.T) { proveSurvival(t, e, u, *x.TemplateID, q, c.prepare, c.fragile, c.sturdy) })
		}
	}
	if found != len(survivalCases) {
		t.Errorf("%d questions found for %d cases", found, len(survivalCases))
	}
}

func proveSurvival(t *testing.T, e *apitest.Env, u *apitest.User, templateID int64, q *exam.Question, prepare, fragile, sturdy string) {
	ctx := context.Background()
	box, err := e.App.Sandboxes.Create(ctx, actor.User(u.ID), sandbox.NewContainer{TemplateID: templateID})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), box.ID) })
	run := func(sc sandbox.Script) *sandbox.Result {
		ran, err := e.App.Sandboxes.ExecIn(ctx, box, sc)
		if err != nil {
			t.Fatal(err)
		}
		return ran[0]
	}
	if prepare != "" {
		if res := run(sandbox.Script{Text: prepare, AsRoot: true}); !res.OK() {
			t.Fatalf("prepare: %s", res.Transcript())
		}
	}
	term, _, err := e.App.Sandboxes.Terminal(ctx, box, 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Close()
	go io.Copy(io.Discard, term) // the shell's output, read so that it never blocks
	typed := func(line string) {
		if _, err := term.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// checkUntil runs the check until done says its result is the awaited
	// one (the process typed into the terminal takes a moment to start).
	checkUntil := func(what string, done func(*sandbox.Result) bool) *sandbox.Result {
		deadline := time.Now().Add(30 * time.Second)
		for {
			res := run(sandbox.Script{Text: q.Key.Check, AsRoot: true})
			if done(res) {
				return res
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the check still says %s", what, res.Transcript())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	typed(fragile)
	res := checkUntil("started with "+fragile, func(r *sandbox.Result) bool {
		return r.OK() || len(r.Failures) > 0 && strings.Contains(r.Failures[0], "hangup")
	})
	if res.OK() {
		t.Fatalf("the check passes for a process started with %q in a terminal, which the terminal's hangup would end", fragile)
	}
	typed("kill %1; wait; " + sturdy)
	checkUntil("started with "+sturdy, (*sandbox.Result).OK)
}

// TestBundledPublicViewsCarryNoSecrets reads every bundled lab and exam as
// anyone and as a student would, and finds none of their scripts, solutions
// or accepted answers in what comes back.
func TestBundledPublicViewsCarryNoSecrets(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.BundledCurriculum = true })
	ctx := context.Background()
	student := e.CreateUser("student", auth.RoleStudent)
	labs, err := e.App.Labs.Labs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exams, err := e.App.Exams.Exams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range labs {
		apitest.RegisterSecret(l.Setup, l.Slug+" setup")
		apitest.RegisterSecret(l.Solution, l.Slug+" solution")
		for _, m := range l.Machines {
			apitest.RegisterSecret(m.Setup, l.Slug+" setup of "+m.Name)
			apitest.RegisterSecret(m.Solution, l.Slug+" solution of "+m.Name)
		}
		for _, task := range l.Tasks {
			apitest.RegisterSecret(task.Check, l.Slug+" check of "+task.Title)
		}
	}
	for _, x := range exams {
		for _, q := range x.Questions {
			apitest.RegisterSecret(q.Key.Check, x.Slug+" check")
			apitest.RegisterSecret(q.Key.Solution, x.Slug+" solution")
			// A short accepted answer ("ls", "750") is also an ordinary word of
			// other lessons' text: only distinctive ones can be looked for.
			for _, a := range q.Key.Accept {
				if len(a) >= 6 {
					apitest.RegisterSecret(a, fmt.Sprintf("%s accepted answer %q", x.Slug, a))
				}
			}
		}
	}
	e.Get("/api/laboratories", "").Expect(t, 200)
	e.Get("/api/exams", "").Expect(t, 200)
	for _, l := range labs {
		e.Get(fmt.Sprintf("/api/laboratories/%d", l.ID), "").Expect(t, 200)
		e.Get(fmt.Sprintf("/api/laboratories/%d", l.ID), student.Token).Expect(t, 200)
		if l.ModuleID != nil {
			e.Get(fmt.Sprintf("/api/laboratories/section/%d/laboratory", *l.ModuleID), student.Token).Expect(t, 200)
		}
	}
	for _, x := range exams {
		e.Get(fmt.Sprintf("/api/exams/%d", x.ID), "").Expect(t, 200)
	}
	if leaks, searched := apitest.Leaks(); len(leaks) > 0 || searched == 0 {
		t.Fatalf("in %d responses: %s", searched, strings.Join(leaks, "\n"))
	}
}

// requireTemplate skips t when the sandbox template it plays on is a machine
// and this host has no machines (unless MachinesRequired, when it fails).
func requireTemplate(t *testing.T, e *apitest.Env, templateID int64) {
	t.Helper()
	tpls, err := e.App.Sandboxes.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range tpls {
		if tpl.ID == templateID && tpl.Kind == sandbox.KindMachine {
			apitest.RequireMachines(t)
		}
	}
}

// onMachineTemplate says whether template templateID makes machines.
func onMachineTemplate(t *testing.T, e *apitest.Env, templateID int64) bool {
	t.Helper()
	tpls, err := e.App.Sandboxes.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range tpls {
		if tpl.ID == templateID {
			return tpl.Kind == sandbox.KindMachine
		}
	}
	return false
}

// hasSolution says whether lab file l has a solution: its own, or one on
// some machine of a lab of several.
func hasSolution(l *lab.File) bool {
	if strings.TrimSpace(l.Solution) != "" {
		return true
	}
	for _, m := range l.Machines {
		if strings.TrimSpace(m.Solution) != "" {
			return true
		}
	}
	return false
}

// solutionRun is one solution script and the sandbox it runs in.
type solutionRun struct {
	where       string // the machine's name, or "the sandbox"
	text        string
	containerID int64
}

// solutions lists, in the lab's order, the solutions an attempt runs: the
// lab's own in its one sandbox, or each machine's in that machine's sandbox
// (machines without a solution are left out).
func solutions(own string, machines []lab.Machine, containerID *int64, attempted []lab.AttemptMachine) []solutionRun {
	if len(machines) == 0 {
		return []solutionRun{{"the sandbox", own, *containerID}}
	}
	var runs []solutionRun
	for _, m := range machines {
		if strings.TrimSpace(m.Solution) == "" {
			continue
		}
		for _, am := range attempted {
			if am.Name == m.Name && am.ContainerID != nil {
				runs = append(runs, solutionRun{m.Name, m.Solution, *am.ContainerID})
			}
		}
	}
	return runs
}
