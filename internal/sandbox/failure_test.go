package sandbox_test

import (
	"context"
	"fmt"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/sandboxtest"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// fakeFixture is a sandbox service on db over a fake engine, with a learner
// and the BusyBox template.
type fakeFixture struct {
	db     *store.DB
	engine *sandboxtest.Engine
	svc    *sandbox.Service
	user   actor.Actor
	tpl    int64
}

func newFakeFixture(t *testing.T, db *store.DB) *fakeFixture {
	t.Helper()
	x := sandboxtest.NewFixture(t, db)
	return &fakeFixture{db: db, engine: x.Engine, svc: x.Service, user: actor.User(x.UserID), tpl: x.BusyBox}
}

func (f *fakeFixture) rows(t *testing.T) []*sandbox.Container {
	t.Helper()
	cs, _, err := f.db.Sandboxes().FindContainers(context.Background(), sandbox.ContainerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// anyKind accepts an error of any kind.
const anyKind errs.Kind = -1

var errEngineDown = fmt.Errorf("%w: dial unix /var/run/docker.sock: connection refused", sandbox.ErrRuntimeUnavailable)

// TestCreateLeavesNothingWhenTheEngineFails: whichever engine call of a
// creation fails, the learner gets the engine's error (503 for an engine
// that does not answer), no row stays in the store, and a container the
// engine made is removed.
func TestCreateLeavesNothingWhenTheEngineFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		break_      func(e *sandboxtest.Engine)
		kind        errs.Kind
		wantRemoved bool
	}{
		{"image check", func(e *sandboxtest.Engine) {
			e.ImageExistsFn = func(context.Context, string) (bool, error) { return false, errEngineDown }
		}, errs.Unavailable, false},
		{"tools volume", func(e *sandboxtest.Engine) {
			e.ToolsVolumeFn = func(context.Context, string) (string, error) { return "", sandbox.ErrToolsMissing }
		}, errs.Unavailable, false},
		{"create", func(e *sandboxtest.Engine) {
			e.CreateFn = func(context.Context, sandbox.Spec) (string, error) { return "", errEngineDown }
		}, errs.Unavailable, false},
		{"start", func(e *sandboxtest.Engine) {
			e.StartFn = func(context.Context, string) error { return errEngineDown }
		}, errs.Unavailable, true},
		{"start of a container removed meanwhile", func(e *sandboxtest.Engine) {
			e.StartFn = func(context.Context, string) error { return sandbox.ErrGone }
		}, anyKind, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				f := newFakeFixture(t, db)
				tt.break_(f.engine)
				c, err := f.svc.Create(context.Background(), f.user, sandbox.NewContainer{TemplateID: f.tpl})
				if err == nil || (tt.kind != anyKind && errs.KindOf(err) != tt.kind) {
					t.Fatalf("Create = %+v, %v; want an error of kind %v", c, err, tt.kind)
				}
				if rows := f.rows(t); len(rows) != 0 {
					t.Errorf("a failed creation left rows: %+v", rows[0])
				}
				if removed := f.engine.Removed(); tt.wantRemoved != (len(removed) == 1) {
					t.Errorf("removed from the engine: %v (want the new container: %v)", removed, tt.wantRemoved)
				}
			})
		})
	}
}

// TestStartWhenTheEngineFails: a stopped sandbox whose start the engine
// refuses stays stopped when the engine is unavailable (try again later), and
// is marked broken when its container no longer exists.
func TestStartWhenTheEngineFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		startErr   error
		kind       errs.Kind
		wantStatus sandbox.Status
	}{
		{"engine unavailable", errEngineDown, errs.Unavailable, sandbox.StatusStopped},
		{"container gone", fmt.Errorf("%w: No such container", sandbox.ErrGone), errs.Conflict, sandbox.StatusError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				ctx := context.Background()
				f := newFakeFixture(t, db)
				c, err := f.svc.Create(ctx, f.user, sandbox.NewContainer{TemplateID: f.tpl})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.svc.Stop(ctx, f.user, c.ID); err != nil {
					t.Fatal(err)
				}
				f.engine.StartFn = func(context.Context, string) error { return tt.startErr }
				got, err := f.svc.Start(ctx, f.user, c.ID)
				if err == nil || errs.KindOf(err) != tt.kind {
					t.Fatalf("Start = %+v, %v; want an error of kind %v", got, err, tt.kind)
				}
				row, err := db.Sandboxes().FindContainerByID(ctx, c.ID)
				if err != nil {
					t.Fatal(err)
				}
				if row.Status != tt.wantStatus || row.StatusDetail == "" {
					t.Errorf("after the failed start the row is %s (%q); want %s with a reason", row.Status, row.StatusDetail, tt.wantStatus)
				}
			})
		})
	}
}
