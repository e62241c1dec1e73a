package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/store"
	"tuxlab/internal/store/storetest"
)

// clock is a settable time for lifecycle tests: no test sleeps to age a sandbox.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	db    *store.DB
	svc   *sandbox.Service
	rt    sandbox.Runtime
	clock *clock
	user  actor.Actor
	tpl   int64
}

func newFixture(t *testing.T, db *store.DB) *fixture {
	rt := apitest.RequireEngine(t)
	ctx := context.Background()
	now := time.Now().UTC()
	u := &auth.User{Username: "learner", Email: "learner@tuxlab.org", PasswordHash: "x", Role: auth.RoleStudent, IsActive: true,
		PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
	if err := db.Users().CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, rt: rt, clock: &clock{t: now}, user: actor.User(u.ID)}
	f.svc = f.service(t, rt, sandbox.Options{IdleTimeout: 30 * time.Minute, MaxLifetime: 4 * time.Hour})
	if err := f.svc.EnsureDefaultTemplates(ctx); err != nil {
		t.Fatal(err)
	}
	tpl, err := db.Sandboxes().FindTemplateByName(ctx, "BusyBox")
	if err != nil {
		t.Fatal(err)
	}
	f.tpl = tpl.ID
	t.Cleanup(func() {
		cs, _, _ := db.Sandboxes().FindContainers(context.Background(), sandbox.ContainerFilter{})
		for _, c := range cs {
			if c.EngineID != "" {
				rt.Remove(context.Background(), c.EngineID)
			}
		}
	})
	return f
}

// service is a sandbox service on f's database and clock over rt, with opt's
// other options and its log discarded.
func (f *fixture) service(t *testing.T, rt sandbox.Runtime, opt sandbox.Options) *sandbox.Service {
	t.Helper()
	opt.Now, opt.Log = f.clock.Now, slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := sandbox.NewService(context.Background(), f.db.Sandboxes(), rt, opt)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (f *fixture) create(t *testing.T) *sandbox.Container {
	t.Helper()
	c, err := f.svc.Create(context.Background(), f.user, sandbox.NewContainer{TemplateID: f.tpl})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rowless makes an engine container named prefix and this install's
// instance id, labelled as sandbox 999999 of the install instance, with no
// row behind it.
func (f *fixture) rowless(t *testing.T, prefix, instance string) string {
	t.Helper()
	id, err := f.rt.Create(context.Background(), sandbox.Spec{Name: prefix + f.svc.Instance(), Image: apitest.TestImage, Cmd: []string{"sleep", "600"},
		Network: "none", Labels: map[string]string{sandbox.LabelManaged: "true", sandbox.LabelInstance: instance, sandbox.LabelContainer: "999999"}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// reconcile runs svc's reconciliation, which must not fail.
func reconcile(t *testing.T, svc *sandbox.Service) {
	t.Helper()
	if err := svc.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSweepStopsIdleSandboxesAndRemovesExpiredOnes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		c := f.create(t)

		// Activity slides the idle stop forward: an API call on it counts.
		f.clock.Add(29 * time.Minute)
		if v, err := f.svc.Visit(ctx, f.user, c.ID); err != nil || !v.LastActivityAt.Equal(f.clock.Now().UTC().Truncate(time.Microsecond)) {
			t.Fatalf("visit: %+v %v", v, err)
		}
		f.clock.Add(29 * time.Minute)
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.svc.Get(ctx, f.user, c.ID); got.Status != sandbox.StatusRunning {
			t.Fatalf("stopped despite activity: %+v", got)
		}
		// Past the idle timeout: stopped, in the engine too.
		f.clock.Add(2 * time.Minute)
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		got, _ := f.svc.Get(ctx, f.user, c.ID)
		if got.Status != sandbox.StatusStopped || !strings.Contains(got.StatusDetail, "without activity") {
			t.Fatalf("after idle: %+v", got)
		}
		if st, err := f.rt.Inspect(ctx, got.EngineID); err != nil || st.Running {
			t.Fatalf("engine state %+v %v", st, err)
		}
		// The lifetime is a hard cap: removed, row and engine container.
		f.clock.Add(4 * time.Hour)
		if err := f.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Get(ctx, f.user, c.ID); !errors.Is(err, sandbox.ErrContainerNotFound) {
			t.Fatalf("expired sandbox still there: %v", err)
		}
		if _, err := f.rt.Inspect(ctx, got.EngineID); !errors.Is(err, sandbox.ErrGone) {
			t.Fatalf("expired engine container: %v", err)
		}
	})
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		kept := f.create(t)
		vanished := f.create(t)
		if _, err := f.svc.Stop(ctx, f.user, vanished.ID); err != nil { // stay within the running quota
			t.Fatal(err)
		}
		// An engine container of this install with no row: an orphan.
		orphan := f.rowless(t, "tuxlab-orphan-", f.svc.Instance())
		// Another install's container sharing the engine: not ours to touch.
		foreign := f.rowless(t, "tuxlab-foreign-", "someone-else")
		defer f.rt.Remove(ctx, foreign)
		// A container removed behind tuxlab's back.
		if err := f.rt.Remove(ctx, vanished.EngineID); err != nil {
			t.Fatal(err)
		}

		reconcile(t, f.svc)
		if _, err := f.rt.Inspect(ctx, orphan); !errors.Is(err, sandbox.ErrGone) {
			t.Fatalf("orphan survived: %v", err)
		}
		if _, err := f.rt.Inspect(ctx, foreign); err != nil {
			t.Fatalf("another install's container was touched: %v", err)
		}
		got, err := db.Sandboxes().FindContainerByID(ctx, vanished.ID)
		if err != nil || got.Status != sandbox.StatusError || !strings.Contains(got.StatusDetail, "vanished") {
			t.Fatalf("vanished row: %+v %v", got, err)
		}
		if got, _ := db.Sandboxes().FindContainerByID(ctx, kept.ID); got.Status != sandbox.StatusRunning {
			t.Fatalf("kept row: %+v", got)
		}
		// A broken sandbox cannot be started, and can be deleted.
		if _, err := f.svc.Start(ctx, f.user, vanished.ID); err == nil {
			t.Fatal("a vanished sandbox started")
		}
		if err := f.svc.Delete(ctx, f.user, vanished.ID); err != nil {
			t.Fatal(err)
		}
		// A container stopped outside tuxlab is reported stopped.
		if err := f.rt.Stop(ctx, kept.EngineID, time.Second); err != nil {
			t.Fatal(err)
		}
		reconcile(t, f.svc)
		if got, _ := db.Sandboxes().FindContainerByID(ctx, kept.ID); got.Status != sandbox.StatusStopped || got.StoppedAt == nil {
			t.Fatalf("externally stopped: %+v", got)
		}
	})
}

// inspectHook is the real engine with a change slipped in just before an
// inspection, which is where another loop can write a row meanwhile.
type inspectHook struct {
	sandbox.Runtime
	before func(engineID string)
}

func (h inspectHook) Inspect(ctx context.Context, engineID string) (sandbox.State, error) {
	h.before(engineID)
	return h.Runtime.Inspect(ctx, engineID)
}

// TestReconcileKeepsANewerRow: what reconciliation learns about an engine
// container is not written over a row that stopped pointing at it meanwhile,
// as when the disk watch removes a sandbox and records why.
func TestReconcileKeepsANewerRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		c := f.create(t)
		const why = "Removed after writing 40 MiB, over its disk limit of 16 MiB"
		hooked := inspectHook{Runtime: f.rt, before: func(engineID string) {
			if engineID != c.EngineID {
				return
			}
			_, err := db.Sandboxes().UpdateContainer(ctx, c.ID, func(c *sandbox.Container) error {
				c.Status, c.EngineID, c.StatusDetail = sandbox.StatusError, "", why
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}}
		svc := f.service(t, hooked, sandbox.Options{})
		if err := f.rt.Remove(ctx, c.EngineID); err != nil {
			t.Fatal(err)
		}
		reconcile(t, svc)
		if got, err := db.Sandboxes().FindContainerByID(ctx, c.ID); err != nil || got.StatusDetail != why {
			t.Fatalf("the newer row was overwritten: %+v %v", got, err)
		}
	})
}

// TestReconcileEndsUnfinishedCreations: a server that died between making a
// container and marking it running leaves a row in creating; past the grace
// period reconciliation ends it as the engine says, running or error.
func TestReconcileEndsUnfinishedCreations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixture(t, db)
		ctx := context.Background()
		started := f.create(t)
		stopped := f.create(t)
		if err := f.rt.Stop(ctx, stopped.EngineID, time.Second); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{started.ID, stopped.ID} {
			if _, err := db.Sandboxes().UpdateContainer(ctx, id, func(c *sandbox.Container) error { c.Status = sandbox.StatusCreating; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		// Within the grace period a creation may still be under way.
		reconcile(t, f.svc)
		if got, _ := db.Sandboxes().FindContainerByID(ctx, started.ID); got.Status != sandbox.StatusCreating {
			t.Fatalf("a young creating row was changed: %+v", got)
		}
		f.clock.Add(3 * time.Minute)
		reconcile(t, f.svc)
		if got, _ := db.Sandboxes().FindContainerByID(ctx, started.ID); got.Status != sandbox.StatusRunning {
			t.Fatalf("an engine-running creation: %+v", got)
		}
		if got, _ := db.Sandboxes().FindContainerByID(ctx, stopped.ID); got.Status != sandbox.StatusError {
			t.Fatalf("a creation whose container is not running: %+v", got)
		}
	})
}

// startHook is the real engine, with the caller giving up just as a
// container is started: a shutdown while the warm pool fills.
type startHook struct {
	sandbox.Runtime
	giveUp context.CancelFunc
}

func (h startHook) Start(ctx context.Context, engineID string) error {
	h.giveUp()
	return h.Runtime.Start(ctx, engineID)
}

// TestPoolFillCutShortLeavesNothing: a warm sandbox whose filling is cut
// short between create and start is removed from the engine all the same.
func TestPoolFillCutShortLeavesNothing(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t, store.SQLite)
	f := newFixture(t, db)
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	svc := f.service(t, startHook{Runtime: f.rt, giveUp: giveUp}, sandbox.Options{PoolSize: 1})
	if err := svc.FillPool(ctx); err == nil {
		t.Fatal("filling went on after the caller gave up")
	}
	left, err := f.rt.List(context.Background(), map[string]string{sandbox.LabelInstance: svc.Instance()})
	if err != nil || len(left) != 0 {
		t.Fatalf("left on the engine: %+v %v", left, err)
	}
}
