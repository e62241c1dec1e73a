package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// Fixture is a sandbox service over the in-memory Engine on a real
// database, with one learner and the default templates: what a failure-path
// test of sandboxes, labs or exams starts from.
type Fixture struct {
	Service *sandbox.Service
	Engine  *Engine
	UserID  int64 // the learner
	BusyBox int64 // the BusyBox template's id
	Discard *slog.Logger
}

// NewFixture makes a Fixture on db.
func NewFixture(t *testing.T, db *store.DB) *Fixture {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	u := &auth.User{Username: "learner", Email: "learner@tuxlab.org", PasswordHash: "x", Role: auth.RoleStudent, IsActive: true,
		PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
	if err := db.Users().CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	f := &Fixture{Engine: NewEngine(), UserID: u.ID, Discard: slog.New(slog.NewTextHandler(io.Discard, nil))}
	svc, err := sandbox.NewService(ctx, db.Sandboxes(), f.Engine, sandbox.Options{Log: f.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.EnsureDefaultTemplates(ctx); err != nil {
		t.Fatal(err)
	}
	tpl, err := db.Sandboxes().FindTemplateByName(ctx, "BusyBox")
	if err != nil {
		t.Fatal(err)
	}
	f.Service, f.BusyBox = svc, tpl.ID
	return f
}

// Each runs test in parallel on every database engine, each with a fresh Fixture.
func Each(t *testing.T, test func(t *testing.T, db *store.DB, x *Fixture)) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) { test(t, db, NewFixture(t, db)) })
}

// BreakEngine makes every script run from now on fail as an engine that
// stopped answering does.
func (f *Fixture) BreakEngine() {
	f.Engine.RunFn = func(context.Context, string, sandbox.ExecSpec, io.Reader, io.Writer, io.Writer) (int, error) {
		return -1, fmt.Errorf("%w: connection reset", sandbox.ErrRuntimeUnavailable)
	}
}
