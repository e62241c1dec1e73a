package content_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"tuxlab/content"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
	"tuxlab/internal/sandbox"
)

// These tests play the bundled laboratories and exams as a learner does: on
// the default configuration (quotas included), through the HTTP API and the
// terminal socket, typing each solution into the learner's interactive
// shell and closing the terminal (a hang-up) before anything is graded.

// Limits that only guard against a hung test; nothing is timed.
const (
	typedWithin  = 3 * time.Minute
	closedWithin = time.Minute
)

// withBundledCurriculum loads the embedded curriculum and changes nothing else.
func withBundledCurriculum(c *config.Config) { c.BundledCurriculum = true }

type taskResultBody struct {
	Title    string   `json:"title"`
	Passed   bool     `json:"passed"`
	Feedback []string `json:"feedback"`
}

type labAttemptBody struct {
	ID          int64            `json:"id"`
	Status      string           `json:"status"`
	ContainerID *int64           `json:"container_id"`
	TerminalURL *string          `json:"terminal_url"`
	Score       int              `json:"score"`
	Passed      bool             `json:"passed"`
	Tasks       []taskResultBody `json:"tasks"`
	// Machines are the sandboxes of a lab of several, in the lab's order.
	Machines []struct {
		Name        string  `json:"name"`
		TerminalURL *string `json:"terminal_url"`
	} `json:"machines"`
}

// TestLabsPlayedThroughTheTerminal: one learner plays every bundled
// laboratory in order. Each starts (its sandbox made and set up), fails every
// task on the fresh sandbox with a reason, is solved by typing its solution
// into the terminal, and, once the terminal is closed, is submitted with
// every task passed and a score of 100. No sandbox is deleted by hand on the
// way: a submitted lab's sandbox must not keep the next one from starting.
// Labs on machines are left to TestBundledChecksProvenBothWays.
func TestLabsPlayedThroughTheTerminal(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	files, err := lab.ReadFiles(content.Curriculum())
	if err != nil {
		t.Fatal(err)
	}
	onMachine := map[string]bool{}
	for _, f := range files {
		onMachine[f.Slug] = f.Template == sandbox.MachineTemplateName
	}
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		learner := e.CreateUser("learner", auth.RoleStudent)
		var labs []struct {
			ID   int64  `json:"id"`
			Slug string `json:"slug"`
		}
		e.Get("/api/laboratories", learner.Token).Expect(t, http.StatusOK).JSON(t, &labs)
		if len(labs) != len(files) || len(labs) == 0 {
			t.Fatalf("%d laboratories served, %d bundled", len(labs), len(files))
		}
		for _, l := range labs {
			// Labs on machines are proven by TestBundledChecksProvenBothWays,
			// side by side; played here, one after the other, each boot
			// would add minutes of CI's two cores. Their terminals are
			// typed into by TestLabOfTwoMachines and the lessons' test.
			if onMachine[l.Slug] {
				continue
			}
			t.Run(l.Slug, func(t *testing.T) { playLab(t, e, learner, l.ID) })
		}
	}, withBundledCurriculum)
}

// playLab plays lab id as learner u: start, check, solve in the terminal,
// close it, submit.
func playLab(t *testing.T, e *apitest.Env, u *apitest.User, id int64) {
	l, err := e.App.Labs.Lab(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	requireTemplate(t, e, l.TemplateID)
	path := fmt.Sprintf("/api/laboratories/%d/", id)
	var started labAttemptBody
	r := e.Do(apitest.Request{Method: "POST", Path: path + "start", Token: u.Token})
	if r.Status != http.StatusCreated {
		t.Fatalf("start: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &started)
	if started.ContainerID == nil || started.TerminalURL == nil {
		t.Fatalf("start gave no sandbox: %s", r.Body)
	}

	var fresh labAttemptBody
	e.Do(apitest.Request{Method: "POST", Path: path + "check", Token: u.Token}).Expect(t, http.StatusOK).JSON(t, &fresh)
	if len(fresh.Tasks) != len(l.Tasks) {
		t.Fatalf("the check reported %d tasks of %d", len(fresh.Tasks), len(l.Tasks))
	}
	for i, task := range fresh.Tasks {
		if task.Passed || len(task.Feedback) == 0 || task.Feedback[0] == "Not done yet" {
			t.Errorf("task %d %q on the fresh sandbox: passed %t, feedback %q", i+1, task.Title, task.Passed, task.Feedback)
		}
	}

	for _, s := range typedSolutions(t, l, started) {
		term := e.OpenTerminal(t, s.url, u.Token, 160, 48)
		if run := term.TypeScript(s.text, typedWithin); run.Code != 0 {
			t.Fatalf("the solution typed into the terminal of %s exited with %d (the terminal ended first: %t):\n%s", s.where, run.Code, run.Ended, run.Transcript)
		}
		term.Hangup()
		e.WaitTerminalsClosed(t, closedWithin)
	}

	var done labAttemptBody
	e.Do(apitest.Request{Method: "POST", Path: path + "submit", Token: u.Token}).Expect(t, http.StatusOK).JSON(t, &done)
	for i, task := range done.Tasks {
		if !task.Passed {
			t.Errorf("task %d %q after the solution and a hang-up: feedback %q", i+1, task.Title, task.Feedback)
		}
	}
	if done.Status != "submitted" || done.Score != 100 || !done.Passed || len(done.Tasks) != len(l.Tasks) {
		t.Errorf("submission: status %s, score %d, passed %t, %d tasks", done.Status, done.Score, done.Passed, len(done.Tasks))
	}
}

type examAttemptBody struct {
	ID          int64  `json:"id"`
	ContainerID *int64 `json:"container_id"`
	// The options of each choice question in the order this attempt shows
	// them, which answers use (absent: the authored order).
	Questions []struct {
		ID      int64    `json:"id"`
		Options []string `json:"options"`
	} `json:"questions"`
}

type examResultsBody struct {
	Status    string `json:"status"`
	Score     int    `json:"score"`
	Passed    bool   `json:"passed"`
	Questions []struct {
		QuestionID int64    `json:"question_id"`
		Position   int      `json:"position"`
		Kind       string   `json:"kind"`
		Correct    bool     `json:"correct"`
		Feedback   []string `json:"feedback"`
	} `json:"questions"`
}

// TestExamsPlayedThroughTheTerminal: one learner takes every bundled exam
// with practical questions twice. A first attempt submitted at once, with
// the right answers to the other questions, fails every practical question
// with a reason; a second one, whose practical solutions are typed into the
// terminal of the sandbox it is graded in, closed before the submit, gets
// every question right.
func TestExamsPlayedThroughTheTerminal(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		learner := e.CreateUser("learner", auth.RoleStudent)
		var exams []struct {
			ID           int64  `json:"id"`
			Slug         string `json:"slug"`
			HasPractical bool   `json:"has_practical"`
			MaxAttempts  int    `json:"max_attempts"`
			TemplateID   *int64 `json:"template_id"`
		}
		e.Get("/api/exams", learner.Token).Expect(t, http.StatusOK).JSON(t, &exams)
		played := 0
		for _, x := range exams {
			// An exam on a machine is proven by TestBundledChecksProvenBothWays
			// (as labs on machines are, see above).
			if !x.HasPractical || onMachineTemplate(t, e, *x.TemplateID) {
				continue
			}
			played++
			t.Run(x.Slug, func(t *testing.T) {
				requireTemplate(t, e, *x.TemplateID)
				if x.MaxAttempts == 1 {
					t.Fatal("an exam of one attempt cannot be failed first and passed next")
				}
				playExam(t, e, learner, x.ID)
			})
		}
		if played == 0 {
			t.Fatal("no bundled exam has practical questions")
		}
	}, withBundledCurriculum)
}

// playExam takes exam id as learner u: a fresh attempt that fails its
// practical questions, then one solved in its terminal.
func playExam(t *testing.T, e *apitest.Env, u *apitest.User, id int64) {
	x, err := e.App.Exams.Exam(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	practical := map[int64]bool{}
	for _, q := range x.Questions {
		if q.Kind == exam.Practical {
			practical[q.ID] = true
		}
	}

	first, box := startExam(t, e, u, x)
	res := submitExam(t, e, u, x, first, box)
	for _, q := range res.Questions {
		switch {
		case practical[q.QuestionID] && (q.Correct || len(q.Feedback) == 0):
			t.Errorf("practical question %d on a fresh attempt: correct %t, feedback %q", q.Position+1, q.Correct, q.Feedback)
		case !practical[q.QuestionID] && !q.Correct:
			t.Errorf("question %d (%s) answered from its key is graded wrong", q.Position+1, q.Kind)
		}
	}

	second, box := startExam(t, e, u, x)
	term := e.OpenTerminal(t, fmt.Sprintf("/ws/terminal/%d", box), u.Token, 160, 48)
	for _, q := range x.Questions {
		if q.Kind != exam.Practical {
			continue
		}
		if run := term.TypeScript(q.Key.Solution, typedWithin); run.Code != 0 {
			t.Fatalf("the solution of question %d typed into the terminal exited with %d (the terminal ended first: %t):\n%s", q.Position+1, run.Code, run.Ended, run.Transcript)
		}
	}
	term.Hangup()
	e.WaitTerminalsClosed(t, closedWithin)
	res = submitExam(t, e, u, x, second, box)
	for _, q := range res.Questions {
		if !q.Correct {
			t.Errorf("question %d (%s) after its solution and a hang-up: feedback %q", q.Position+1, q.Kind, q.Feedback)
		}
	}
	if res.Status != "submitted" || res.Score != 100 || !res.Passed || len(res.Questions) != len(x.Questions) {
		t.Errorf("submission: status %s, score %d, passed %t, %d questions", res.Status, res.Score, res.Passed, len(res.Questions))
	}
}

// startExam starts an attempt of x and returns it with the sandbox its
// practical questions are graded in: the one the start names, or, where
// starting makes none, a fresh one the learner makes from the exam's
// template (and removes once done with the exam, making room for the next).
func startExam(t *testing.T, e *apitest.Env, u *apitest.User, x *exam.Exam) (*examAttemptBody, int64) {
	t.Helper()
	var at examAttemptBody
	r := e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/start", x.ID), Token: u.Token})
	if r.Status != http.StatusCreated {
		t.Fatalf("start: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &at)
	if at.ContainerID != nil {
		return &at, *at.ContainerID
	}
	var c struct {
		ID int64 `json:"id"`
	}
	r = e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token, Body: map[string]any{"template_id": *x.TemplateID}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create the exam's sandbox: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &c)
	t.Cleanup(func() {
		e.Send(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: u.Token})
	})
	return &at, c.ID
}

// submitExam submits attempt at of x, graded in sandbox box, with the key's
// answer to every question that is not practical, given as the attempt
// shows the options.
func submitExam(t *testing.T, e *apitest.Env, u *apitest.User, x *exam.Exam, at *examAttemptBody, box int64) *examResultsBody {
	t.Helper()
	shown := map[int64][]string{}
	for _, q := range at.Questions {
		shown[q.ID] = q.Options
	}
	// where is the index, in the order shown, of the authored option i.
	where := func(q *exam.Question, i int) int {
		if opts := shown[q.ID]; len(opts) == len(q.Options) {
			if j := slices.Index(opts, q.Options[i]); j >= 0 {
				return j
			}
			t.Fatalf("question %d: option %q is not among those shown, %q", q.Position+1, q.Options[i], opts)
		}
		return i
	}
	var answers []exam.Answer
	for _, q := range x.Questions {
		a := exam.Answer{QuestionID: q.ID}
		switch q.Kind {
		case exam.SingleChoice:
			c := where(q, *q.Key.Answer)
			a.Choice = &c
		case exam.MultipleChoice:
			for _, i := range q.Key.Answers {
				a.Choices = append(a.Choices, where(q, i))
			}
		case exam.ShortText:
			a.Text = &q.Key.Accept[0]
		default:
			continue
		}
		answers = append(answers, a)
	}
	var res examResultsBody
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", x.ID), Token: u.Token,
		Body: map[string]any{"answers": answers, "container_id": box}}).Expect(t, http.StatusOK).JSON(t, &res)
	if len(res.Questions) != len(x.Questions) {
		t.Fatalf("%d questions graded of %d", len(res.Questions), len(x.Questions))
	}
	return &res
}

// typedSolution is a solution and the terminal it is typed into.
type typedSolution struct{ where, text, url string }

// typedSolutions lists, in the lab's order, the solutions to type: the lab's
// own into its one sandbox's terminal, or each machine's into that machine's
// (machines without a solution are left out).
func typedSolutions(t *testing.T, l *lab.Lab, started labAttemptBody) []typedSolution {
	t.Helper()
	if len(l.Machines) == 0 {
		return []typedSolution{{"the sandbox", l.Solution, *started.TerminalURL}}
	}
	if len(started.Machines) != len(l.Machines) {
		t.Fatalf("the attempt shows %d machines, the lab has %d", len(started.Machines), len(l.Machines))
	}
	var out []typedSolution
	for i, m := range l.Machines {
		if strings.TrimSpace(m.Solution) == "" {
			continue
		}
		am := started.Machines[i]
		if am.Name != m.Name || am.TerminalURL == nil {
			t.Fatalf("machine %d of the attempt: %q with terminal %v, the lab's is %q", i, am.Name, am.TerminalURL, m.Name)
		}
		out = append(out, typedSolution{m.Name, m.Solution, *am.TerminalURL})
	}
	return out
}
