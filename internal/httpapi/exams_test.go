package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"tuxlab/internal/actor"
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

// examAttemptBody is an attempt as its learner works on it.
type examAttemptBody struct {
	ID            int64   `json:"id"`
	ExamID        int64   `json:"exam_id"`
	Status        string  `json:"status"`
	StartedAt     string  `json:"started_at"`
	ExpiresAt     string  `json:"expires_at"`
	ContainerID   *int64  `json:"container_id"`
	TerminalURL   *string `json:"terminal_url"`
	SandboxNotice *string `json:"sandbox_notice"`
	Questions     []struct {
		ID      int64    `json:"id"`
		Kind    string   `json:"kind"`
		Options []string `json:"options"`
	} `json:"questions"`
}

// shown returns the index at which the attempt shows the option of question
// qid that reads text.
func (a examAttemptBody) shown(t *testing.T, qid int64, text string) int {
	t.Helper()
	for _, q := range a.Questions {
		if q.ID == qid {
			if i := slices.Index(q.Options, text); i >= 0 {
				return i
			}
		}
	}
	t.Fatalf("attempt %d shows no option %q for question %d: %+v", a.ID, text, qid, a.Questions)
	return -1
}

// options returns the options the attempt shows for question qid.
func (a examAttemptBody) options(qid int64) []string {
	for _, q := range a.Questions {
		if q.ID == qid {
			return q.Options
		}
	}
	return nil
}

func startExam(t *testing.T, e *apitest.Env, token string, examID int64) examAttemptBody {
	t.Helper()
	var at examAttemptBody
	post(e, token, fmt.Sprintf("/api/exams/%d/start", examID), nil).Expect(t, 201).JSON(t, &at)
	return at
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
		Options     []string `json:"options"`
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
	post(e, admin.Token, "/api/admin/exams?"+query, body).Expect(t, 201).JSON(t, &ex)
	return ex
}

func TestExamAttemptLifecycle(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
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
		post(e, alice.Token, "/api/exams/99999/start", nil).Expect(t, 404)
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/start", ex.ID)}).Expect(t, 401)

		// Start; a second start names the attempt in progress.
		start := fmt.Sprintf("/api/exams/%d/start", ex.ID)
		at := startExam(t, e, alice.Token, ex.ID)
		if at.Status != "in_progress" || at.ExpiresAt <= at.StartedAt || len(at.Questions) != 3 || at.ContainerID != nil || at.SandboxNotice != nil {
			t.Fatalf("attempt %+v", at)
		}
		var clash struct {
			Detail    string `json:"detail"`
			AttemptID int64  `json:"attempt_id"`
			ExpiresAt string `json:"expires_at"`
		}
		post(e, alice.Token, start, nil).Expect(t, 409).JSON(t, &clash)
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
			r := post(e, alice.Token, submit, bad).Expect(t, 422)
			if l := locs(t, r); len(l) == 0 || !strings.HasPrefix(l[0], "body") {
				t.Fatalf("422 locations %v", l)
			}
		}
		post(e, bob.Token, submit, noAnswers()).Expect(t, 409)

		// First attempt: single right (2), multiple wrong (a subset), short text right
		// despite case and spaces (1): 3 of 4 = 75, passed at 70. Options are
		// named by their index in the order the attempt shows them.
		var res examResultsBody
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": q[0].ID, "choice": at.shown(t, q[0].ID, "/etc/shadow")},
			{"question_id": q[1].ID, "choices": []int{at.shown(t, q[1].ID, "chmod"), at.shown(t, q[1].ID, "chown")}},
			{"question_id": q[2].ID, "text": "  " + strings.ToUpper(examAcceptSecret) + " "},
		}}}).Expect(t, 200).JSON(t, &res)
		if res.Status != "submitted" || res.Points != 3 || res.Score != 75 || !res.Passed || len(res.Questions) != 3 {
			t.Fatalf("results %+v", res)
		}
		if !res.Questions[0].Correct || res.Questions[1].Correct || !res.Questions[2].Correct || res.Questions[1].Explanation != "ls only reads." {
			t.Fatalf("per question %+v", res.Questions)
		}
		// The results show the options as the attempt did.
		if !slices.Equal(res.Questions[0].Options, at.options(q[0].ID)) || !slices.Equal(res.Questions[1].Options, at.options(q[1].ID)) ||
			len(res.Questions[2].Options) != 0 {
			t.Fatalf("results show options %v and %v, the attempt showed %v and %v", res.Questions[0].Options, res.Questions[1].Options,
				at.options(q[0].ID), at.options(q[1].ID))
		}
		// Graded once: a second submit is refused and changes nothing.
		post(e, alice.Token, submit, noAnswers()).Expect(t, 409)
		var again examResultsBody
		e.Get(results, alice.Token).Expect(t, 200).JSON(t, &again)
		if again.Score != 75 || again.Status != "submitted" {
			t.Fatalf("results changed: %+v", again)
		}
		e.Get(results, bob.Token).Expect(t, 404)
		e.Get(results, admin.Token).Expect(t, 200)

		// Second attempt, nothing answered: 0, failed. Then no attempts are left.
		post(e, alice.Token, start, nil).Expect(t, 201)
		post(e, alice.Token, submit, noAnswers()).Expect(t, 200).JSON(t, &res)
		if res.Score != 0 || res.Passed {
			t.Fatalf("empty submission %+v", res)
		}
		if r := post(e, alice.Token, start, nil).Expect(t, 409); !strings.Contains(r.Detail(), "No attempts left") {
			t.Fatalf("third start: %s", r.Body)
		}
	})
}

func TestExamDeadlineAndConcurrentSubmits(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=5", fixtureExamBody())
		start, submit := fmt.Sprintf("/api/exams/%d/start", ex.ID), fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		answers := map[string]any{"answers": []map[string]any{{"question_id": ex.Questions[0].ID, "choice": 1}}}

		// Two submits at once: exactly one grades.
		var at struct{ ID int64 }
		post(e, alice.Token, start, nil).Expect(t, 201).JSON(t, &at)
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
		post(e, alice.Token, start, nil).Expect(t, 201).JSON(t, &at)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET expires_at = started_at WHERE id = $1`, at.ID); err != nil {
			t.Fatal(err)
		}
		if r := post(e, alice.Token, submit, answers).Expect(t, 409); !strings.Contains(r.Detail(), "time limit") {
			t.Fatalf("late submit: %s", r.Body)
		}
		var res examResultsBody
		e.Get(fmt.Sprintf("/api/exams/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &res)
		if res.Status != "expired" || res.Score != 0 || res.Passed {
			t.Fatalf("expired attempt %+v", res)
		}
		// An expired attempt no longer blocks a new start.
		post(e, alice.Token, start, nil).Expect(t, 201)
	})
}

func TestAdminExamAuthoring(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)

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
		post(e, alice.Token, fmt.Sprintf("/api/exams/%d/start", ex.ID), nil).Expect(t, 201)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID), Token: admin.Token}).Expect(t, 409)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d?cascade=true", ex.ID), Token: admin.Token}).Expect(t, 200)
		e.Get(fmt.Sprintf("/api/exams/%d", ex.ID), "").Expect(t, 404)
		e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/exams/%d", ex.ID), Token: admin.Token}).Expect(t, 404)
	})
}

// TestExamOptionOrder: every attempt shows each choice question's options in
// an order of its own, stored with it; answers are indexes in that order and
// are graded against it. Admins see the authored order.
func TestExamOptionOrder(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		// Twenty options: two attempts showing the same order, or an attempt
		// showing the authored one, is a chance of one in 20! (2.4e18).
		options := make([]string, 20)
		for i := range options {
			options[i] = fmt.Sprintf("option %c", 'a'+i)
		}
		ex := createExam(t, e, admin, "slug=order&title=Order", map[string]any{"questions": []map[string]any{
			{"kind": "single_choice", "prompt": "Pick c.", "options": options, "answer": 2},
			{"kind": "multiple_choice", "prompt": "Pick a and t.", "options": options, "answers": []int{0, 19}},
			{"kind": "short_text", "prompt": "Say yes.", "accept": []string{"yes"}},
		}})
		single, multi := ex.Questions[0].ID, ex.Questions[1].ID

		a1, b1 := startExam(t, e, alice.Token, ex.ID), startExam(t, e, bob.Token, ex.ID)
		for _, at := range []examAttemptBody{a1, b1} {
			for _, qid := range []int64{single, multi} {
				got := slices.Clone(at.options(qid))
				if slices.Equal(got, options) {
					t.Fatalf("attempt %d shows question %d in the authored order", at.ID, qid)
				}
				slices.Sort(got)
				if !slices.Equal(got, options) {
					t.Fatalf("attempt %d shows question %d with options %v, not a reordering of the authored ones", at.ID, qid, got)
				}
			}
			if len(at.options(ex.Questions[2].ID)) != 0 {
				t.Fatalf("a short-text question shows options: %+v", at.Questions)
			}
		}
		if slices.Equal(a1.options(single), b1.options(single)) {
			t.Fatalf("two attempts show the same order %v", a1.options(single))
		}
		// The order is stored: reading the attempt again shows the same one;
		// another learner's attempt is not there; the admin view keeps the
		// authored order.
		var again examAttemptBody
		e.Get(fmt.Sprintf("/api/exams/attempts/%d", a1.ID), alice.Token).Expect(t, 200).JSON(t, &again)
		if !slices.Equal(again.options(single), a1.options(single)) || !slices.Equal(again.options(multi), a1.options(multi)) {
			t.Fatalf("the attempt shows %v now, %v at its start", again.options(single), a1.options(single))
		}
		e.Get(fmt.Sprintf("/api/exams/attempts/%d", a1.ID), bob.Token).Expect(t, 404)
		e.Get("/api/exams/attempts/999999", alice.Token).Expect(t, 404)
		var adminView examBody
		e.Get(fmt.Sprintf("/api/admin/exams/%d", ex.ID), admin.Token).Expect(t, 200).JSON(t, &adminView)
		if !slices.Equal(adminView.Questions[0].Options, options) {
			t.Fatalf("the admin view shows %v", adminView.Questions[0].Options)
		}

		// Graded against the attempt's order: alice names the right options
		// by where she sees them; bob names them by their authored indexes,
		// which his attempt shows elsewhere.
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		var res examResultsBody
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": single, "choice": a1.shown(t, single, "option c")},
			{"question_id": multi, "choices": []int{a1.shown(t, multi, "option t"), a1.shown(t, multi, "option a")}},
		}}}).Expect(t, 200).JSON(t, &res)
		if !res.Questions[0].Correct || !res.Questions[1].Correct || res.Points != 2 {
			t.Fatalf("right options in the shown order: %+v", res)
		}
		if !slices.Equal(res.Questions[0].Options, a1.options(single)) {
			t.Fatalf("results show %v, the attempt showed %v", res.Questions[0].Options, a1.options(single))
		}
		// Bob answers with the authored indexes: right only where his attempt
		// happens to show the right options there (a chance of 1 in 20 and
		// 1 in 190), whatever the order, so the test holds for every draw.
		authoredC, authoredAT := 2, []int{0, 19}
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: bob.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": single, "choice": authoredC}, {"question_id": multi, "choices": authoredAT},
		}}}).Expect(t, 200).JSON(t, &res)
		bobSingle := b1.options(single)[authoredC] == "option c"
		bobMulti := []string{b1.options(multi)[0], b1.options(multi)[19]}
		slices.Sort(bobMulti)
		if res.Questions[0].Correct != bobSingle || res.Questions[1].Correct != slices.Equal(bobMulti, []string{"option a", "option t"}) {
			t.Fatalf("authored indexes on bob's attempt %v / %v graded %+v", b1.options(single), b1.options(multi), res.Questions)
		}

		// An attempt without a stored order (one begun before orders were
		// drawn) shows and grades the authored order.
		a2 := startExam(t, e, alice.Token, ex.ID)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET option_order = '{}' WHERE id = $1`, a2.ID); err != nil {
			t.Fatal(err)
		}
		e.Get(fmt.Sprintf("/api/exams/attempts/%d", a2.ID), alice.Token).Expect(t, 200).JSON(t, &again)
		if !slices.Equal(again.options(single), options) {
			t.Fatalf("an attempt without an order shows %v", again.options(single))
		}
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": single, "choice": authoredC}, {"question_id": multi, "choices": authoredAT},
		}}}).Expect(t, 200).JSON(t, &res)
		if !res.Questions[0].Correct || !res.Questions[1].Correct {
			t.Fatalf("authored indexes on an attempt without an order: %+v", res)
		}
	})
}

// TestExamAnswerShapes: an answer must have the shape of its question's
// kind; anything else is 422 naming the field, and nothing is graded.
func TestExamAnswerShapes(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		tpl := busyboxTemplate(t, e)
		body := fixtureExamBody()
		body["questions"] = append(body["questions"].([]map[string]any), map[string]any{
			"kind": "practical", "prompt": "Create the file /tmp/exam-practical-done.", "check": examCheckSecret})
		apitest.RegisterSecret(examCheckSecret, "a practical check")
		// Answers are validated before anything else, so the practical
		// question needs no sandbox here.
		ex := createExam(t, e, admin, fmt.Sprintf("slug=shapes&title=Shapes&template_id=%d", tpl), body)
		single, multi, text, practical := ex.Questions[0].ID, ex.Questions[1].ID, ex.Questions[2].ID, ex.Questions[3].ID
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		cases := []struct {
			answers []map[string]any
			want    []string
		}{
			{[]map[string]any{{"question_id": single, "choices": []int{1}}}, []string{"body.answers.0.choices"}},
			{[]map[string]any{{"question_id": single, "choices": []int{}}}, []string{"body.answers.0.choices"}},
			{[]map[string]any{{"question_id": single, "choice": 1, "text": "b"}}, []string{"body.answers.0.text"}},
			{[]map[string]any{{"question_id": multi, "choice": 0}}, []string{"body.answers.0.choice"}},
			{[]map[string]any{{"question_id": multi, "text": "chmod"}}, []string{"body.answers.0.text"}},
			{[]map[string]any{{"question_id": text, "choice": 0}, {"question_id": text + 1000, "text": "x"}},
				[]string{"body.answers.0.choice", "body.answers.1.question_id"}},
			{[]map[string]any{{"question_id": text, "text": "ok"}, {"question_id": practical, "text": "done"}}, []string{"body.answers.1.text"}},
			{[]map[string]any{{"question_id": practical, "choices": []int{0}}}, []string{"body.answers.0.choices"}},
		}
		for _, c := range cases {
			r := e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": c.answers}}).Expect(t, 422)
			if got := locs(t, r); !slices.Equal(got, c.want) {
				t.Errorf("%v: 422 at %v, want %v", c.answers, got, c.want)
			}
		}
		// A well-shaped submission (an answer to a practical question with
		// nothing but its id is fine) gets past validation: no attempt is open.
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": single, "choice": 1}, {"question_id": multi, "choices": []int{}}, {"question_id": text, "text": "x"},
			{"question_id": practical}}}}).Expect(t, 409)
	})
}

// examPracticalFixture creates, on BusyBox, the fixture exam with a practical
// question worth 3 points: its check passes once /tmp/exam-practical-done exists.
func examPracticalFixture(t *testing.T, e *apitest.Env, admin *apitest.User, query string) examBody {
	t.Helper()
	apitest.RegisterSecret(examCheckSecret, "a practical check")
	apitest.RegisterSecret(examSolSecret, "a practical solution")
	tpl := busyboxTemplate(t, e)
	body := fixtureExamBody()
	body["questions"] = append(body["questions"].([]map[string]any), map[string]any{
		"kind": "practical", "prompt": "Create the file /tmp/exam-practical-done.", "check": examCheckSecret, "solution": examSolSecret, "points": 3,
		"explanation": "touch creates an empty file."})
	return createExam(t, e, admin, fmt.Sprintf("%s&template_id=%d", query, tpl), body)
}

// solveIn runs the fixture's practical solution in sandbox id as its owner.
func solveIn(t *testing.T, e *apitest.Env, owner *apitest.User, id int64) {
	t.Helper()
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(owner.ID), id, sandbox.Script{Text: examSolSecret})
	if err != nil || !res.OK() {
		t.Fatalf("solution in sandbox %d: %v %v", id, err, res)
	}
}

// TestExamPracticalFreshSandbox: each attempt of an exam with a practical
// question gets a sandbox made for it, where the question is graded; a
// retake does not pass on what the previous attempt left behind, and its
// sandbox takes the previous one's place in the learner's quota.
func TestExamPracticalFreshSandbox(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		ex := examPracticalFixture(t, e, admin, "slug=practical&title=Practical")
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		empty := map[string]any{"answers": []any{}}
		tpl := busyboxTemplate(t, e)
		// A sandbox of alice's own, running, as a lesson leaves one: the
		// default quota lets her run two.
		own := createSandbox(t, e, alice.Token, tpl)
		solveIn(t, e, alice, own.ID)

		// The start names the attempt's fresh sandbox.
		first := startExam(t, e, alice.Token, ex.ID)
		if first.ContainerID == nil || *first.ContainerID == own.ID || first.TerminalURL == nil ||
			*first.TerminalURL != fmt.Sprintf("/ws/terminal/%d", *first.ContainerID) ||
			first.SandboxNotice == nil || !strings.Contains(*first.SandboxNotice, fmt.Sprint(*first.ContainerID)) || !strings.Contains(*first.SandboxNotice, "fresh") {
			t.Fatalf("start %+v", first)
		}
		var box containerBody
		e.Get(fmt.Sprintf("/api/containers/%d", *first.ContainerID), alice.Token).Expect(t, 200).JSON(t, &box)
		if box.Status != "running" || box.Name != "Exam: Practical" || box.TemplateID != tpl {
			t.Fatalf("the attempt's sandbox %+v", box)
		}
		e.Get(fmt.Sprintf("/api/exams/attempts/%d", first.ID), bob.Token).Expect(t, 404)
		// Another sandbox than the attempt's cannot be named, not even her own.
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}, "container_id": own.ID}}).Expect(t, 422)

		// Graded in the attempt's sandbox, not in her other one where the
		// file exists: unsolved, the check's FAIL line is the feedback.
		var res examResultsBody
		post(e, alice.Token, submit, empty).Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; p.Correct || len(p.Feedback) != 1 || p.Feedback[0] != "/tmp/exam-practical-done does not exist" || p.Output != nil {
			t.Fatalf("unsolved practical %+v", p)
		}

		// Second attempt: solved in its sandbox, stopped there by the idle
		// stop (as it may be), started again to be graded: it passes.
		second := startExam(t, e, alice.Token, ex.ID)
		if second.ContainerID == nil || *second.ContainerID == *first.ContainerID {
			t.Fatalf("the retake's sandbox %v, the first attempt's %d", second.ContainerID, *first.ContainerID)
		}
		e.Get(fmt.Sprintf("/api/containers/%d", *first.ContainerID), alice.Token).Expect(t, 404) // replaced
		solveIn(t, e, alice, *second.ContainerID)
		stopSandbox(t, e, alice.Token, *second.ContainerID)
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}, "container_id": *second.ContainerID}}).
			Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; !p.Correct || p.Points != 3 || res.Points != 3 {
			t.Fatalf("solved practical %+v (total %d)", p, res.Points)
		}

		// A retake does not pass on the previous attempt's state: a fresh
		// sandbox again, where nothing is solved.
		third := startExam(t, e, alice.Token, ex.ID)
		e.Get(fmt.Sprintf("/api/containers/%d", *second.ContainerID), alice.Token).Expect(t, 404)
		mine := listSandboxes(t, e, alice.Token)
		if len(mine) != 2 {
			t.Fatalf("alice has %d sandboxes, want her own and the attempt's: %+v", len(mine), mine)
		}
		post(e, alice.Token, submit, empty).Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; p.Correct || res.Points != 0 {
			t.Fatalf("a retake passed on the previous attempt's state: %+v", p)
		}

		// A deleted attempt sandbox fails the practical question rather than
		// keeping the attempt open, and no other sandbox stands in for it.
		fourth := startExam(t, e, alice.Token, ex.ID)
		e.Get(fmt.Sprintf("/api/containers/%d", *third.ContainerID), alice.Token).Expect(t, 404)
		deleteSandbox(t, e, alice.Token, *fourth.ContainerID)
		post(e, alice.Token, submit, empty).Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; p.Correct || len(p.Feedback) != 1 || !strings.Contains(p.Feedback[0], "no longer exists") {
			t.Fatalf("practical with the attempt's sandbox deleted: %+v", p)
		}
	})
}

// TestExamSandboxQuota: the attempt's sandbox counts against the learner's
// quota; when there is no room a start is 409 saying what to do, and uses
// no attempt and leaves nothing behind.
func TestExamSandboxQuota(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		ex := examPracticalFixture(t, e, admin, "slug=quota&title=Quota&max_attempts=1")
		tpl := busyboxTemplate(t, e)
		a := createSandbox(t, e, alice.Token, tpl)
		createSandbox(t, e, alice.Token, tpl) // two running: the default running quota is full

		r := post(e, alice.Token, fmt.Sprintf("/api/exams/%d/start", ex.ID), nil).Expect(t, 409)
		if d := r.Detail(); !strings.Contains(d, "fresh sandbox") || !strings.Contains(d, "stop one") {
			t.Fatalf("start with a full quota: %s", r.Body)
		}
		mine := listSandboxes(t, e, alice.Token)
		if len(mine) != 2 {
			t.Fatalf("a refused start left %d sandboxes", len(mine))
		}
		// Stopping one makes room; the refused start used none of her one attempt.
		stopSandbox(t, e, alice.Token, a.ID)
		if at := startExam(t, e, alice.Token, ex.ID); at.ContainerID == nil {
			t.Fatalf("start %+v", at)
		}
	})
}

// TestExamLegacyAttemptSandbox: an attempt begun before attempts had a
// sandbox of their own is graded as it was then: in the sandbox named, or
// the learner's running one of the exam's template, and without one the
// submit waits for it.
func TestExamLegacyAttemptSandbox(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		ex := examPracticalFixture(t, e, admin, "slug=legacy&title=Legacy")
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		at := startExam(t, e, alice.Token, ex.ID)
		// As the attempt would be without its sandbox.
		deleteSandbox(t, e, alice.Token, *at.ContainerID)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET container_id = NULL WHERE id = $1`, at.ID); err != nil {
			t.Fatal(err)
		}
		if r := post(e, alice.Token, submit, noAnswers()).Expect(t, 409); !strings.Contains(r.Detail(), "sandbox") {
			t.Fatalf("submit without a sandbox: %s", r.Body)
		}
		tpl := busyboxTemplate(t, e)
		c := createSandbox(t, e, alice.Token, tpl)
		other := createSandbox(t, e, bob.Token, tpl)
		e.Do(apitest.Request{Method: "POST", Path: submit, Token: alice.Token, Body: map[string]any{"answers": []any{}, "container_id": other.ID}}).Expect(t, 422)
		solveIn(t, e, alice, c.ID)
		var res examResultsBody
		post(e, alice.Token, submit, noAnswers()).Expect(t, 200).JSON(t, &res)
		if p := res.Questions[3]; !p.Correct {
			t.Fatalf("legacy attempt, solved in the learner's sandbox: %+v", p)
		}
	})
}
