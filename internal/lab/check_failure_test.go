package lab_test

import (
	"context"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/lab"
	"tuxlab/internal/sandbox/sandboxtest"
	"tuxlab/internal/store"
)

// TestCheckWhenTheEngineFails: a check whose scripts cannot run (the engine
// stops answering mid-check) answers the engine's error and leaves the
// attempt as it was: in progress, its results untouched, and no check
// claimed, so the learner can check again.
func TestCheckWhenTheEngineFails(t *testing.T) {
	sandboxtest.Each(t, func(t *testing.T, db *store.DB, x *sandboxtest.Fixture) {
		ctx := context.Background()
		labs := lab.NewService(db.Labs(), x.Service, lab.Options{Log: x.Discard})
		slug, title := "engine-fails", "Engine fails"
		l, err := labs.Create(ctx, actor.AsAdmin(), lab.Input{Slug: &slug, Title: &title, TemplateID: &x.BusyBox,
			Tasks: []lab.TaskInput{{Title: "A file", Check: "test -f /tmp/x"}}})
		if err != nil {
			t.Fatal(err)
		}
		a := actor.User(x.UserID)
		started, err := labs.Start(ctx, a, l.ID)
		if err != nil {
			t.Fatal(err)
		}

		x.BreakEngine()
		if got, err := labs.Check(ctx, a, l.ID); err == nil || !errs.Is(err, errs.Unavailable) {
			t.Fatalf("Check = %+v, %v; want the engine's 503", got, err)
		}
		after, err := db.Labs().FindAttemptByID(ctx, started.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.Status != attempt.InProgress || after.CheckingSince != nil || after.LastCheckAt == nil ||
			len(after.Results) != 0 || after.ContainerID == nil || *after.ContainerID != *started.ContainerID {
			t.Errorf("after a failed check the attempt is %+v; want it in progress, unclaimed, without results, with its sandbox", after)
		}
	})
}
