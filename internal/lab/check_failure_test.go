package lab_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/auth"
	"tuxlab/internal/errs"
	"tuxlab/internal/lab"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// TestCheckWhenTheEngineFails: a check whose scripts cannot run (the engine
// stops answering mid-check) answers the engine's error and leaves the
// attempt as it was: in progress, its results untouched, and no check
// claimed, so the learner can check again.
func TestCheckWhenTheEngineFails(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		u := &auth.User{Username: "learner", Email: "learner@tuxlab.org", PasswordHash: "x", Role: auth.RoleStudent, IsActive: true,
			PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
		if err := db.Users().CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		discard := slog.New(slog.NewTextHandler(io.Discard, nil))
		engine := sandboxtest.NewEngine()
		sandboxes, err := sandbox.NewService(ctx, db.Sandboxes(), engine, sandbox.Options{Log: discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := sandboxes.EnsureDefaultTemplates(ctx); err != nil {
			t.Fatal(err)
		}
		tpl, err := db.Sandboxes().FindTemplateByName(ctx, "BusyBox")
		if err != nil {
			t.Fatal(err)
		}
		labs := lab.NewService(db.Labs(), sandboxes, lab.Options{Log: discard})
		slug, title := "engine-fails", "Engine fails"
		l, err := labs.Create(ctx, actor.AsAdmin(), lab.Input{Slug: &slug, Title: &title, TemplateID: &tpl.ID,
			Tasks: []lab.TaskInput{{Title: "A file", Check: "test -f /tmp/x"}}})
		if err != nil {
			t.Fatal(err)
		}
		a := actor.User(u.ID)
		started, err := labs.Start(ctx, a, l.ID)
		if err != nil {
			t.Fatal(err)
		}

		engine.RunFn = func(context.Context, string, sandbox.ExecSpec, io.Reader, io.Writer, io.Writer) (int, error) {
			return -1, fmt.Errorf("%w: connection reset", sandbox.ErrRuntimeUnavailable)
		}
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
