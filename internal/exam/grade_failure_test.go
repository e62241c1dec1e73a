package exam_test

import (
	"context"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/exam"
	"tuxlab/internal/sandbox/sandboxtest"
	"tuxlab/internal/store"
)

// TestSubmitWhenTheEngineFails: a submission whose practical checks cannot
// run (the engine stops answering) answers the engine's error and releases
// the attempt untouched: still in progress, not being graded, without
// answers or results, so the learner can submit again.
func TestSubmitWhenTheEngineFails(t *testing.T) {
	sandboxtest.Each(t, func(t *testing.T, db *store.DB, x *sandboxtest.Fixture) {
		ctx := context.Background()
		exams := exam.NewService(db.Exams(), x.Service, exam.Options{Log: x.Discard})
		slug, title := "engine-fails", "Engine fails"
		e, err := exams.Create(ctx, actor.AsAdmin(), exam.Input{Slug: &slug, Title: &title, TemplateID: &x.BusyBox,
			Questions: []exam.QuestionInput{{Kind: exam.Practical, Prompt: "Make /tmp/x", Check: "test -f /tmp/x"}}})
		if err != nil {
			t.Fatal(err)
		}
		a := actor.User(x.UserID)
		started, _, err := exams.Start(ctx, a, e.ID)
		if err != nil {
			t.Fatal(err)
		}

		x.BreakEngine()
		if got, _, err := exams.Submit(ctx, a, e.ID, exam.Submission{}); err == nil || !errs.Is(err, errs.Unavailable) {
			t.Fatalf("Submit = %+v, %v; want the engine's 503", got, err)
		}
		after, err := db.Exams().FindAttemptByID(ctx, started.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.Status != attempt.InProgress || after.GradingSince != nil || after.FinishedAt != nil ||
			len(after.Answers) != 0 || len(after.Results) != 0 {
			t.Errorf("after a failed submission the attempt is %+v; want it in progress, released, unanswered", after)
		}
	})
}
