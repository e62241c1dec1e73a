package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

type examBody struct {
	ID            int64 `json:"id"`
	MaxAttempts   int   `json:"max_attempts"`
	MaxPoints     int   `json:"max_points"`
	QuestionCount int   `json:"question_count"`
	Questions     []struct {
		ID      int64    `json:"id"`
		Kind    string   `json:"kind"`
		Options []string `json:"options"`
		Check   string   `json:"check"`
	} `json:"questions"`
}

type examResultsBody struct {
	ID        int64  `json:"id"`
	ExamID    int64  `json:"exam_id"`
	Status    string `json:"status"`
	Score     int    `json:"score"`
	Points    int    `json:"points"`
	MaxPoints int    `json:"max_points"`
	Passed    bool   `json:"passed"`
	Questions []struct {
		QuestionID  int64    `json:"question_id"`
		Correct     bool     `json:"correct"`
		Points      int      `json:"points"`
		Explanation string   `json:"explanation"`
		Feedback    []string `json:"feedback"`
		Output      *string  `json:"output"`
	} `json:"questions"`
}

// Secrets of the fixture exam: each one is registered with the leak watch.
const (
	examAcceptSecret = "umask-secret-0027"
	examCheckSecret  = "#!/bin/sh\n# exam-check-secret-7f3a\ntest -f /tmp/exam-practical-done || { echo 'FAIL: /tmp/exam-practical-done does not exist'; exit 1; }\n"
	examSolSecret    = "touch /tmp/exam-practical-done # exam-solution-secret-91b2\n"
)

// fixtureExam is an admin's JSON body for an exam of every non-practical kind.
func fixtureExamBody() map[string]any {
	apitest.RegisterSecret(examAcceptSecret, "an accepted short-text answer")
	return map[string]any{
		"description": "Checks what you know about **permissions**.",
		"questions": []map[string]any{
			{"kind": "single_choice", "prompt": "Which file holds password hashes?", "options": []string{"/etc/passwd", "/etc/shadow", "/etc/group"},
				"answer": 1, "points": 2, "explanation": "Only root may read the hashes."},
			{"kind": "multiple_choice", "prompt": "Which commands change ownership or mode?", "options": []string{"chmod", "chown", "ls", "chgrp"},
				"answers": []int{0, 1, 3}, "explanation": "ls only reads."},
			{"kind": "short_text", "prompt": "Type the secret umask of this fixture.", "accept": []string{examAcceptSecret},
				"explanation": "The fixture's secret is in its source."},
		},
	}
}

func createExam(t *testing.T, e *apitest.Env, admin *apitest.User, query string, body any) examBody {
	t.Helper()
	var ex examBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?" + query, Token: admin.Token, Body: body}).Expect(t, 201).JSON(t, &ex)
	return ex
}

func TestExamAttemptLifecycle(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=20&passing_score=70&max_attempts=2", fixtureExamBody())
		if ex.MaxPoints != 4 || ex.QuestionCount != 3 || ex.MaxAttempts != 2 {
			t.Fatalf("created %+v", ex)
		}

		// Public reads: the exam and its questions, never an answer.
		var list []examBody
		e.Get("/api/exams", "").Expect(t, 200).JSON(t, &list)
		if len(list) != 1 || list[0].ID != ex.ID {
			t.Fatalf("list %+v", list)
		}
		pub := e.Get(fmt.Sprintf("/api/exams/%d", ex.ID), "").Expect(t, 200)
		for _, secret := range []string{`"answer"`, `"answers"`, `"accept"`, `"explanation"`, examAcceptSecret} {
			if strings.Contains(string(pub.Body), secret) {
				t.Fatalf("public exam shows %s: %s", secret, pub.Body)
			}
		}
		e.Get("/api/exams/99999", "").Expect(t, 404)
		e.Do(apitest.Request{Method: "POST", Path: "/api/exams/99999/start", Token: alice.Token}).Expect(t, 404)
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/start", ex.ID)}).Expect(t, 401)

		// Start; a second start names the attempt in progress.
		var at struct {
			ID        int64  `json:"id"`
			Status    string `json:"status"`
			StartedAt string `json:"started_at"`
			ExpiresAt string `json:"expires_at"`
		}
		start := fmt.Sprintf("/api/exams/%d/start", ex.ID)
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201).JSON(t, &at)
		if at.Status != "in_progress" || at.ExpiresAt <= at.StartedAt {
			t.Fatalf("attempt %+v", at)
		}
		var clash struct {
			Detail    string `json:"detail"`
			AttemptID int64  `json:"attempt_id"`
			ExpiresAt string `json:"expires_at"`
		}
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 409).JSON(t, &clash)
		if clash.AttemptID != at.ID || clash.ExpiresAt != at.ExpiresAt {
			t.Fatalf("409 names attempt %d, want %d: %s", clash.AttemptID, at.ID, clash.Detail)
		}
		// Results of an attempt in progress: not yet; another user's: 404.
		results := fmt.Sprintf("/api/exams/attempts/%d/results", at.ID)
		e.Get(results, alice.Token).Expect(t, 409)
		e.Get(results, bob.Token).Expect(t, 404)

		// Bad submissions change nothing.
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		q := ex.Questions
		for _, bad := range []map[string]any{
			{"answers": []map[string]any{{"question_id": 999999, "choice": 0}}},
			{"answers": []map[string]any{{"question_id": q[0].ID, "choice": 7}}},
			{"answers": []map[string]any{{"question_id": q[1].ID, "choices": []int{0, 9}}}},
			{"answers": []map[string]any{{"question_id": q[0].ID, "choice": 1}, {"question_id": q[0].ID, "choice": 1}}},
			{"answers": "all of them"},
		} {
			r := e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: bad}).Expect(t, 422)
			if l := locs(t, r); len(l) == 0 || !strings.HasPrefix(l[0], "body") {
				t.Fatalf("422 locations %v", l)
			}
		}
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: bob.Token, Body: map[string]any{"answers": []any{}}}).Expect(t, 409)

		// First attempt: single right (2), multiple wrong (a subset), short text right
		// despite case and spaces (1): 3 of 4 = 75, passed at 70.
		var res examResultsBody
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": q[0].ID, "choice": 1},
			{"question_id": q[1].ID, "choices": []int{0, 1}},
			{"question_id": q[2].ID, "text": "  " + strings.ToUpper(examAcceptSecret) + " "},
		}}}).Expect(t, 200).JSON(t, &res)
		if res.Status != "submitted" || res.Points != 3 || res.Score != 75 || !res.Passed || len(res.Questions) != 3 {
			t.Fatalf("results %+v", res)
		}
		if !res.Questions[0].Correct || res.Questions[1].Correct || !res.Questions[2].Correct || res.Questions[1].Explanation != "ls only reads." {
			t.Fatalf("per question %+v", res.Questions)
		}
		// Graded once: a second submit is refused and changes nothing.
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}}}).Expect(t, 409)
		var again examResultsBody
		e.Get(results, alice.Token).Expect(t, 200).JSON(t, &again)
		if again.Score != 75 || again.Status != "submitted" {
			t.Fatalf("results changed: %+v", again)
		}
		e.Get(results, bob.Token).Expect(t, 404)
		e.Get(results, admin.Token).Expect(t, 200)

		// Second attempt, nothing answered: 0, failed. Then no attempts are left.
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201)
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}}}).Expect(t, 200).JSON(t, &res)
		if res.Score != 0 || res.Passed {
			t.Fatalf("empty submission %+v", res)
		}
		if r := e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 409); !strings.Contains(r.Detail(), "No attempts left") {
			t.Fatalf("third start: %s", r.Body)
		}
	})
}

func TestExamDeadlineAndConcurrentSubmits(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=5", fixtureExamBody())
		start, submit := fmt.Sprintf("/api/exams/%d/start", ex.ID), fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		answers := map[string]any{"answers": []map[string]any{{"question_id": ex.Questions[0].ID, "choice": 1}}}

		// Two submits at once: exactly one grades.
		var at struct{ ID int64 }
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201).JSON(t, &at)
		reqs := make([]apitest.Request, 8)
		for i := range reqs {
			reqs[i] = apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: answers}
		}
		statuses := statusesOf(e.DoConcurrently(reqs))
		ok := 0
		for _, s := range statuses {
			switch s {
			case 200:
				ok++
			case 409:
			default:
				t.Fatalf("concurrent submit answered %d", s)
			}
		}
		if ok != 1 {
			t.Fatalf("%d of %d concurrent submits graded: %v", ok, len(statuses), statuses)
		}

		// A submit after the deadline is refused and ends the attempt as expired.
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201).JSON(t, &at)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET expires_at = started_at WHERE id = $1`, at.ID); err != nil {
			t.Fatal(err)
		}
		if r := e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: answers}).Expect(t, 409); !strings.Contains(r.Detail(), "time limit") {
			t.Fatalf("late submit: %s", r.Body)
		}
		var res examResultsBody
		e.Get(fmt.Sprintf("/api/exams/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &res)
		if res.Status != "expired" || res.Score != 0 || res.Passed {
			t.Fatalf("expired attempt %+v", res)
		}
		// An expired attempt no longer blocks a new start.
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201)
	})
}

func TestAdminExamAuthoring(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)

		// YAML body, as the files are written.
		yamlBody := "description: From YAML\nquestions:\n  - kind: single_choice\n    prompt: Pick b\n    options: [a, b]\n    answer: 1\n"
		var ex examBody
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?slug=yaml-exam&title=From+YAML", Token: admin.Token, Body: yamlBody,
			Header: http.Header{"Content-Type": {"application/yaml"}}}).Expect(t, 201).JSON(t, &ex)
		if ex.QuestionCount != 1 {
			t.Fatalf("created %+v", ex)
		}
		var full struct {
			Questions []struct {
				ID     int64 `json:"id"`
				Answer *int  `json:"answer"`
			} `json:"questions"`
		}
		e.Get(fmt.Sprintf("/api/admin/exams/%d", ex.ID), admin.Token).Expect(t, 200).JSON(t, &full)
		if len(full.Questions) != 1 || full.Questions[0].Answer == nil || *full.Questions[0].Answer != 1 {
			t.Fatalf("admin view %+v", full)
		}
		e.Get("/api/admin/exams", admin.Token).Expect(t, 200)

		// Update scalars only: the question (and its id) stays.
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/exams/%d?title=Renamed&max_attempts=1", ex.ID), Token: admin.Token}).Expect(t, 200)
		var after struct {
			Title     string `json:"title"`
			Questions []struct {
				ID int64 `json:"id"`
			} `json:"questions"`
		}
		e.Get(fmt.Sprintf("/api/admin/exams/%d", ex.ID), admin.Token).Expect(t, 200).JSON(t, &after)
		if after.Title != "Renamed" || len(after.Questions) != 1 || after.Questions[0].ID != full.Questions[0].ID {
			t.Fatalf("after update %+v", after)
		}

		// Validation: every problem named, in the query or the body, and nothing stored.
		cases := []struct {
			query string
			body  any
			locs  []string
		}{
			{"title=x", map[string]any{"questions": []map[string]any{{"kind": "single_choice", "prompt": "p", "options": []string{"a", "b"}}}},
				[]string{"query.slug", "body.questions.0.answer"}},
			{"slug=bad_slug&title=x&time_limit_minutes=0", nil, []string{"query.time_limit_minutes"}},
			{"slug=s1&title=x", map[string]any{"questions": []map[string]any{{"kind": "essay", "prompt": "p"}}}, []string{"body.questions.0.kind"}},
			{"slug=s2&title=x", map[string]any{"questions": []map[string]any{{"kind": "short_text", "prompt": "p", "accept": []string{"chmod"},
				"explanation": "Use chmod."}}}, []string{"body.questions.0.explanation"}},
			{"slug=s3&title=x", map[string]any{"questions": []map[string]any{{"kind": "practical", "prompt": "p", "check": "true"}}}, []string{"query.template_id"}},
			{"slug=s4&title=x", map[string]any{"questions": []map[string]any{{"kind": "multiple_choice", "prompt": "p", "options": []string{"a", "b"},
				"answers": []int{1, 1}, "check": "true"}}}, []string{"body.questions.0.answers", "body.questions.0.check"}},
			{"slug=s5&title=x&template_id=99999", map[string]any{"questions": []map[string]any{{"kind": "practical", "prompt": "p", "check": "true"}}}, []string{"query.template_id"}},
		}
		for _, c := range cases {
			r := e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?" + c.query, Token: admin.Token, Body: c.body}).Expect(t, 422)
			got := locs(t, r)
			for _, want := range c.locs {
				if !slices.Contains(got, want) {
					t.Fatalf("%s: 422 at %v, want %s", c.query, got, want)
				}
			}
		}
		var all []examBody
		e.Get("/api/exams", "").Expect(t, 200).JSON(t, &all)
		if len(all) != 1 {
			t.Fatalf("a refused create stored something: %d exams", len(all))
		}
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?slug=yaml-exam&title=Again", Token: admin.Token, Body: fixtureExamBody()}).Expect(t, 409)
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/exams?slug=x&title=x", Token: admin.Token, Body: "questions: [",
			Header: http.Header{"Content-Type": {"application/yaml"}}}).Expect(t, 422)

		// Students cannot author or read answers.
		for _, req := range []apitest.Request{
			{Method: "GET", Path: "/api/admin/exams"}, {Method: "GET", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID)},
			{Method: "POST", Path: "/api/admin/exams?slug=z&title=z", Body: fixtureExamBody()},
			{Method: "PUT", Path: fmt.Sprintf("/api/admin/exams/%d?title=z", ex.ID)}, {Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID)},
		} {
			req.Token = alice.Token
			e.Do(req).Expect(t, 403)
		}

		// Delete: with attempts only with cascade.
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/start", ex.ID), Token: alice.Token}).Expect(t, 201)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID), Token: admin.Token}).Expect(t, 409)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d?cascade=true", ex.ID), Token: admin.Token}).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/exams/%d", ex.ID), "").Expect(t, 404)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID), Token: admin.Token}).Expect(t, 404)
	})
}

// TestExamPracticalQuestion: a practical question is checked by its script in
// the learner's running sandbox; without one the submit waits for it.
func TestExamPracticalQuestion(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)
		apitest.RegisterSecret(examCheckSecret, "a practical check")
		apitest.RegisterSecret(examSolSecret, "a practical solution")
		tpl := busyboxTemplate(t, e)
		body := fixtureExamBody()
		body["questions"] = append(body["questions"].([]map[string]any), map[string]any{
			"kind": "practical", "prompt": "Create the file /tmp/exam-practical-done.", "check": examCheckSecret, "solution": examSolSecret, "points": 3,
			"explanation": "touch creates an empty file."})
		ex := createExam(t, e, admin, fmt.Sprintf("slug=practical&title=Practical&template_id=%d", tpl), body)
		start, submit := fmt.Sprintf("/api/exams/%d/start", ex.ID), fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		empty := map[string]any{"answers": []any{}}

		// No running sandbox: refused, and the attempt stays open.
		var at struct{ ID int64 }
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201).JSON(t, &at)
		if r := e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: empty}).Expect(t, 409); !strings.Contains(r.Detail(), "sandbox") {
			t.Fatalf("submit without a sandbox: %s", r.Body)
		}
		c := createSandbox(t, e, alice.Token, tpl)
		other := createSandbox(t, e, bob.Token, tpl)
		// Another user's sandbox cannot be named.
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}, "container_id": other.ID}}).Expect(t, 422)

		// Unsolved: the check's FAIL line is the feedback.
		var res examResultsBody
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: empty}).Expect(t, 200).JSON(t, &res)
		p := res.Questions[3]
		if p.Correct || len(p.Feedback) != 1 || p.Feedback[0] != "/tmp/exam-practical-done does not exist" || p.Output != nil {
			t.Fatalf("unsolved practical %+v", p)
		}

		// Solved in the sandbox: the next attempt's check passes.
		if _, err := e.App.Sandboxes.Exec(context.Background(), sandbox.Actor{UserID: alice.ID}, c.ID, sandbox.Script{Text: examSolSecret}); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "POST", Path: start, Token: alice.Token}).Expect(t, 201)
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}, "container_id": c.ID}}).Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; !p.Correct || p.Points != 3 || res.Points != 3 {
			t.Fatalf("solved practical %+v (total %d)", p, res.Points)
		}
	})
}
