package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
)

// progressBody is GET /api/progress.
type progressBody struct {
	Laboratories []struct {
		LaboratoryID int64 `json:"laboratory_id"`
		Attempts     int   `json:"attempts"`
		Passed       bool  `json:"passed"`
		BestScore    *int  `json:"best_score"`
		Latest       *struct {
			ID          int64  `json:"id"`
			Status      string `json:"status"`
			ContainerID *int64 `json:"container_id"`
			Score       int    `json:"score"`
			Tasks       []struct {
				Passed bool `json:"passed"`
			} `json:"tasks"`
		} `json:"latest"`
		Best *struct {
			ID    int64 `json:"id"`
			Score int   `json:"score"`
		} `json:"best"`
	} `json:"laboratories"`
	Exams []struct {
		ExamID              int64  `json:"exam_id"`
		AttemptsUsed        int    `json:"attempts_used"`
		AttemptsLeft        *int   `json:"attempts_left"`
		BestScore           *int   `json:"best_score"`
		BestAttemptID       *int64 `json:"best_attempt_id"`
		Passed              bool   `json:"passed"`
		InProgressAttemptID *int64 `json:"in_progress_attempt_id"`
	} `json:"exams"`
}

func getProgress(t *testing.T, e *apitest.Env, token string) progressBody {
	t.Helper()
	var p progressBody
	e.Get("/api/progress", token).Expect(t, 200).JSON(t, &p)
	return p
}

// TestExamProgress: the progress API gives per exam the attempts used and
// left, the attempt in progress and the best score, of the caller only.
func TestExamProgress(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=20&passing_score=50&max_attempts=3", fixtureExamBody())
		unlimited := createExam(t, e, admin, "slug=free&title=Free", fixtureExamBody())
		e.Get("/api/progress", "").Expect(t, 401)

		p := getProgress(t, e, alice.Token)
		if len(p.Exams) != 2 || p.Exams[0].ExamID != ex.ID || p.Exams[0].AttemptsUsed != 0 || p.Exams[0].AttemptsLeft == nil ||
			*p.Exams[0].AttemptsLeft != 3 || p.Exams[0].BestScore != nil || p.Exams[0].InProgressAttemptID != nil {
			t.Fatalf("before any attempt: %+v", p.Exams)
		}
		if p.Exams[1].ExamID != unlimited.ID || p.Exams[1].AttemptsLeft != nil {
			t.Fatalf("an unlimited exam: %+v", p.Exams[1])
		}

		at := startExam(t, e, alice.Token, ex.ID)
		p = getProgress(t, e, alice.Token)
		if got := p.Exams[0]; got.AttemptsUsed != 1 || *got.AttemptsLeft != 2 || got.InProgressAttemptID == nil || *got.InProgressAttemptID != at.ID {
			t.Fatalf("in progress: %+v", got)
		}
		// Bob sees none of it.
		if got := getProgress(t, e, bob.Token).Exams[0]; got.AttemptsUsed != 0 || got.InProgressAttemptID != nil {
			t.Fatalf("bob sees %+v", got)
		}

		// Right on the single choice only: 2 of 4 points.
		submit := fmt.Sprintf("/api/exams/%d/submit", ex.ID)
		right := map[string]any{"answers": []map[string]any{{"question_id": ex.Questions[0].ID, "choice": at.shown(t, ex.Questions[0].ID, "/etc/shadow")}}}
		post(e, alice.Token, submit, right).Expect(t, 200)
		second := startExam(t, e, alice.Token, ex.ID)
		post(e, alice.Token, submit, noAnswers()).Expect(t, 200)

		p = getProgress(t, e, alice.Token)
		got := p.Exams[0]
		if got.AttemptsUsed != 2 || *got.AttemptsLeft != 1 || got.InProgressAttemptID != nil || got.BestScore == nil || *got.BestScore != 50 ||
			*got.BestAttemptID != at.ID || !got.Passed {
			t.Fatalf("after two attempts (best %d, then %d): %+v", at.ID, second.ID, got)
		}
		if got := getProgress(t, e, bob.Token).Exams[0]; got.AttemptsUsed != 0 || got.BestScore != nil || got.Passed {
			t.Fatalf("bob sees %+v", got)
		}
	})
}

// examAttemptDraft is what GET /api/exams/attempts/{id} says of the draft.
type examAttemptDraft struct {
	Status       string `json:"status"`
	DraftAnswers []struct {
		QuestionID int64   `json:"question_id"`
		Choice     *int    `json:"choice"`
		Choices    []int   `json:"choices"`
		Text       *string `json:"text"`
	} `json:"draft_answers"`
}

// TestExamDrafts: answers saved while an attempt is in progress come back
// with the attempt (a reload, another device), are validated as a submit's,
// only the owner saves them and only while the attempt is in progress; an
// attempt that runs out of time is graded from its draft.
func TestExamDrafts(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		ex := createExam(t, e, admin, "slug=perms&title=Permissions&time_limit_minutes=20&passing_score=50", fixtureExamBody())
		at := startExam(t, e, alice.Token, ex.ID)
		attempt, draft := fmt.Sprintf("/api/exams/attempts/%d", at.ID), fmt.Sprintf("/api/exams/attempts/%d/draft", at.ID)

		var read examAttemptDraft
		e.Get(attempt, alice.Token).Expect(t, 200).JSON(t, &read)
		if read.DraftAnswers == nil || len(read.DraftAnswers) != 0 {
			t.Fatalf("before a save: %+v", read)
		}

		shadow := at.shown(t, ex.Questions[0].ID, "/etc/shadow")
		answers := map[string]any{"answers": []map[string]any{
			{"question_id": ex.Questions[0].ID, "choice": shadow},
			{"question_id": ex.Questions[2].ID, "text": "half-typed"},
		}}
		e.Do(apitest.Request{Method: "PUT", Path: draft, Token: alice.Token, Body: answers}).Expect(t, 200)
		e.Get(attempt, alice.Token).Expect(t, 200).JSON(t, &read)
		if len(read.DraftAnswers) != 2 || *read.DraftAnswers[0].Choice != shadow || *read.DraftAnswers[1].Text != "half-typed" {
			t.Fatalf("read back: %+v", read)
		}

		// Validated as a submit's answers are.
		bad := map[string]any{"answers": []map[string]any{{"question_id": ex.Questions[0].ID, "choice": 7}}}
		r := e.Do(apitest.Request{Method: "PUT", Path: draft, Token: alice.Token, Body: bad}).Expect(t, 422)
		if l := locs(t, r); !slices.Equal(l, []string{"body.answers.0.choice"}) {
			t.Fatalf("out of range: %v", l)
		}
		e.Do(apitest.Request{Method: "PUT", Path: draft, Token: alice.Token, Body: map[string]any{}}).Expect(t, 422)
		e.Get(attempt, alice.Token).Expect(t, 200).JSON(t, &read)
		if len(read.DraftAnswers) != 2 {
			t.Fatalf("a refused draft changed the saved one: %+v", read)
		}

		// Only the owner: another user's attempt is 404, an admin's too (drafts are the learner's own).
		e.Do(apitest.Request{Method: "PUT", Path: draft, Token: bob.Token, Body: answers}).Expect(t, 404)
		e.Get(attempt, bob.Token).Expect(t, 404)
		e.Do(apitest.Request{Method: "PUT", Path: draft, Token: admin.Token, Body: answers}).Expect(t, 404)
		e.Do(apitest.Request{Method: "PUT", Path: "/api/exams/attempts/999999/draft", Token: alice.Token, Body: answers}).Expect(t, 404)

		// The submit grades what it sends; after it no draft is taken.
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", ex.ID), Token: alice.Token,
			Body: map[string]any{"answers": []any{}}}).Expect(t, 200)
		e.Do(apitest.Request{Method: "PUT", Path: draft, Token: alice.Token, Body: answers}).Expect(t, 409)

		// An attempt that runs out of time: no more drafts, and graded from the saved one.
		late := startExam(t, e, alice.Token, ex.ID)
		lateDraft := fmt.Sprintf("/api/exams/attempts/%d/draft", late.ID)
		e.Do(apitest.Request{Method: "PUT", Path: lateDraft, Token: alice.Token, Body: map[string]any{"answers": []map[string]any{
			{"question_id": ex.Questions[0].ID, "choice": late.shown(t, ex.Questions[0].ID, "/etc/shadow")}}}}).Expect(t, 200)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET expires_at = started_at WHERE id = $1`, late.ID); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Request{Method: "PUT", Path: lateDraft, Token: alice.Token, Body: answers}).Expect(t, 409)
		var res examResultsBody
		e.Get(fmt.Sprintf("/api/exams/attempts/%d/results", late.ID), alice.Token).Expect(t, 200).JSON(t, &res)
		if res.Status != "expired" || res.Points != 2 || res.Score != 50 || !res.Passed || len(res.Questions) != 3 || !res.Questions[0].Correct {
			t.Fatalf("expired attempt graded from its draft: %+v", res)
		}
		if p := getProgress(t, e, alice.Token).Exams[0]; p.BestScore == nil || *p.BestScore != 50 || *p.BestAttemptID != late.ID {
			t.Fatalf("progress after the expired attempt: %+v", p)
		}
	})
}

// TestLabProgressAndQuota: the progress API gives per laboratory the latest
// attempt (in progress with its sandbox, then ended with per-task results)
// and the best, of the caller only; a lab that ran out leaves no sandbox in
// the way of a lesson's practice sandbox or the next lab.
func TestLabProgressAndQuota(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		bob := e.CreateUser("bob", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		check := "#!/bin/sh\n# lab-check-secret-progress\n[ -f /home/learner/done ] || { echo 'FAIL: not done'; exit 1; }\n"
		one, two := oneTaskLab(t, e, admin, "progress-1", check), oneTaskLab(t, e, admin, "progress-2", check)

		p := getProgress(t, e, alice.Token)
		if len(p.Laboratories) != 2 || p.Laboratories[0].LaboratoryID != one || p.Laboratories[0].Latest != nil || p.Laboratories[0].BestScore != nil {
			t.Fatalf("before any attempt: %+v", p.Laboratories)
		}
		at := startLab(t, e, alice.Token, one)
		p = getProgress(t, e, alice.Token)
		if l := p.Laboratories[0]; l.Latest == nil || l.Latest.ID != at.ID || l.Latest.Status != "in_progress" || l.Latest.ContainerID == nil ||
			*l.Latest.ContainerID != *at.ContainerID || l.Best != nil || l.Passed {
			t.Fatalf("in progress: %+v", l)
		}
		if l := getProgress(t, e, bob.Token).Laboratories[0]; l.Latest != nil || l.Attempts != 0 {
			t.Fatalf("bob sees %+v", l)
		}
		e.Get(fmt.Sprintf("/api/laboratories/attempts/%d/results", at.ID), bob.Token).Expect(t, 404)

		if res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), *at.ContainerID, sandbox.Script{Text: "touch ~/done"}); err != nil || !res.OK() {
			t.Fatalf("solving: %v %+v", err, res)
		}
		e.Do(apitest.Request{Method: "POST", Path: labPath(one, "submit"), Token: alice.Token}).Expect(t, 200)
		p = getProgress(t, e, alice.Token)
		if l := p.Laboratories[0]; l.Latest == nil || l.Latest.Status != "submitted" || l.Latest.ContainerID != nil || len(l.Latest.Tasks) != 1 ||
			!l.Latest.Tasks[0].Passed || !l.Passed || l.BestScore == nil || *l.BestScore != 100 || l.Best.ID != at.ID {
			t.Fatalf("submitted: %+v", l)
		}

		// Lab 2 is left to run out with a lesson sandbox running beside it:
		// the running quota (2) is full until the ended lab's sandbox goes.
		createSandbox(t, e, alice.Token, tpl)
		left := startLab(t, e, alice.Token, two)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE lab_attempts SET expires_at = started_at WHERE id = $1`, left.ID); err != nil {
			t.Fatal(err)
		}
		var c struct{ ID int64 }
		e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: alice.Token, Body: map[string]any{"template_id": tpl}}).Expect(t, 201).JSON(t, &c)
		t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID) })
		e.Get(fmt.Sprintf("/api/containers/%d", *left.ContainerID), alice.Token).Expect(t, 404)
		p = getProgress(t, e, alice.Token)
		if l := p.Laboratories[1]; l.Latest == nil || l.Latest.ID != left.ID || l.Latest.Status != "expired" || l.Latest.ContainerID != nil || l.Passed {
			t.Fatalf("ran out: %+v", l)
		}
		// And lab 1 starts again past the practice sandboxes once one is deleted: nothing of the labs is in the way.
		deleteSandbox(t, e, alice.Token, c.ID)
		startLab(t, e, alice.Token, one)
	})
}

// TestExamDraftGradedWithPractical: an attempt left to run out is graded
// from its draft, its practical question checked in its own sandbox, even
// when the learner's next start (of another exam) is what ends it: the
// sandbox is removed only after the check ran.
func TestExamDraftGradedWithPractical(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		admin, alice := rootAndAlice(e)
		first := examPracticalFixture(t, e, admin, "slug=first&title=First&passing_score=50")
		second := examPracticalFixture(t, e, admin, "slug=second&title=Second")
		at := startExam(t, e, alice.Token, first.ID)
		solveIn(t, e, alice, *at.ContainerID)
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/exams/attempts/%d/draft", at.ID), Token: alice.Token,
			Body: map[string]any{"answers": []map[string]any{{"question_id": first.Questions[0].ID, "choice": at.shown(t, first.Questions[0].ID, "/etc/shadow")}}}}).Expect(t, 200)
		if _, err := e.DB.SQL().ExecContext(context.Background(), `UPDATE exam_attempts SET expires_at = started_at WHERE id = $1`, at.ID); err != nil {
			t.Fatal(err)
		}
		next := startExam(t, e, alice.Token, second.ID)
		t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *next.ContainerID) })
		e.Get(fmt.Sprintf("/api/containers/%d", *at.ContainerID), alice.Token).Expect(t, 404) // made room for the new one
		var res examResultsBody
		e.Get(fmt.Sprintf("/api/exams/attempts/%d/results", at.ID), alice.Token).Expect(t, 200).JSON(t, &res)
		// 2 points for the choice, 3 for the practical question, of 7.
		if res.Status != "expired" || res.Points != 5 || !res.Passed || !res.Questions[0].Correct || !res.Questions[3].Correct {
			t.Fatalf("the expired attempt: %+v", res)
		}
	})
}
