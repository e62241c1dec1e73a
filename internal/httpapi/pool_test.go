package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// poolOf lists this install's warm sandboxes of template tpl on the engine:
// engine id to the template version it was made for. A sandbox handed out
// keeps its pool labels (the engine's labels are fixed): pass it in handed.
func poolOf(t *testing.T, docker *client.Client, e *apitest.Env, tpl int64, handed ...string) map[string]string {
	t.Helper()
	f := client.Filters{}.Add("label", sandbox.LabelInstance+"="+e.App.Sandboxes.Instance()).
		Add("label", sandbox.LabelPool+"="+strconv.FormatInt(tpl, 10))
	res, err := docker.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range res.Items {
		if !slices.Contains(handed, c.ID) {
			out[c.ID] = c.Labels[sandbox.LabelPoolVersion]
		}
	}
	return out
}

// TestWarmPool: the server keeps a started sandbox ready per template, hands
// it to the next learner who creates one (a working shell, with the
// learner's quotas and the host cap counting it only then), refills, replaces
// entries when the template changes, survives reconciliation, and removes its
// pool when it stops.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		docker, err := client.New(client.FromEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer docker.Close()
		root := e.CreateUser("root", auth.RoleAdmin)
		alice := e.CreateUser("alice", auth.RoleStudent)
		bob := e.CreateUser("bob", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); e.App.Background(ctx) }()
		stopped := false
		stop := func() {
			if !stopped {
				cancel()
				<-done
				stopped = true
			}
		}
		defer stop()

		var warm string
		eventually(t, time.Minute, "a warm sandbox", func() bool {
			if e.App.Sandboxes.Warm(tpl) == 0 {
				return false
			}
			for id := range poolOf(t, docker, e, tpl) {
				warm = id
				return true
			}
			return false
		})
		// The host cap is 1 and the warm sandbox runs: it counts for nobody.
		c := createSandbox(t, e, alice.Token, tpl)
		if got := engineID(t, e, c.ID); got != warm {
			t.Fatalf("create made %s instead of handing out the warm %s", got, warm)
		}
		res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(alice.ID), c.ID, sandbox.Script{Text: "id -un; hostname"})
		if err != nil || !res.OK() || res.Stdout != "learner\ntuxlab\n" {
			t.Fatalf("shell in a handed-out sandbox: %+v %v", res, err)
		}
		// Its first terminal takes the shell the pool started, at the size asked.
		tc := e.OpenTerminal(t, c.TerminalURL, alice.Token, 132, 43)
		tc.Exchange("stty size; echo warm-$((6*7))\n", "43 132\r\nwarm-42")
		tc.Hangup()
		// Now it counts: bob meets the host cap, alice her running quota.
		e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: bob.Token,
			Body: map[string]any{"template_id": tpl}}).Expect(t, http.StatusServiceUnavailable)
		if got := e.Get(fmt.Sprintf("/api/containers/%d", c.ID), bob.Token); got.Status != 404 {
			t.Fatalf("another learner sees a handed-out sandbox: %d", got.Status)
		}

		// The pool refills with a new container, not the one handed out.
		var refill string
		eventually(t, time.Minute, "the pool to refill", func() bool {
			if e.App.Sandboxes.Warm(tpl) == 0 {
				return false
			}
			for id := range poolOf(t, docker, e, tpl) {
				if id != warm {
					refill = id
					return true
				}
			}
			return false
		})
		// Reconciliation leaves warm sandboxes alone.
		if err := e.App.Sandboxes.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok := poolOf(t, docker, e, tpl)[refill]; !ok {
			t.Fatal("reconciliation removed a warm sandbox")
		}
		// Editing the template replaces what the pool holds.
		e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/sandbox-templates/%d?memory_mb=96", tpl), Token: root.Token}).Expect(t, 200)
		eventually(t, time.Minute, "the pool to follow the template", func() bool {
			p := poolOf(t, docker, e, tpl, warm)
			_, old := p[refill]
			return !old && len(p) == 1 && e.App.Sandboxes.Warm(tpl) == 1
		})
		var fresh string
		for id := range poolOf(t, docker, e, tpl, warm) {
			fresh = id
		}
		info, err := docker.ContainerInspect(context.Background(), fresh, client.ContainerInspectOptions{})
		if err != nil || info.Container.HostConfig.Memory != 96<<20 {
			t.Fatalf("the refilled sandbox has the old settings: %v", err)
		}

		// Stopping the server removes its pool, and only its pool.
		stop()
		if p := poolOf(t, docker, e, tpl, warm); len(p) != 0 {
			t.Fatalf("warm sandboxes outlived the server: %v", p)
		}
		e.Get(fmt.Sprintf("/api/containers/%d", c.ID), alice.Token).Expect(t, 200)
		if st, err := docker.ContainerInspect(context.Background(), warm, client.ContainerInspectOptions{}); err != nil || !st.Container.State.Running {
			t.Fatalf("the learner's sandbox went with the pool: %v", err)
		}
	}, func(c *config.Config) { c.SandboxPoolSize, c.SandboxMaxRunning = 1, 1 })
}

// TestWarmPoolOfADeadProcess: a process that starts removes at once the pool
// containers a dead process of the install left (no heartbeat, or one that
// stopped), however young, and leaves a live replica's pool alone.
func TestWarmPoolOfADeadProcess(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		docker, err := client.New(client.FromEnv)
		if err != nil {
			t.Fatal(err)
		}
		defer docker.Close()
		tpl := busyboxTemplate(t, e)
		ctx := context.Background()
		poolEntry := func(owner string) string {
			res, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
				Config: &container.Config{Image: apitest.TestImage, Cmd: []string{"sleep", "600"}, Labels: map[string]string{
					sandbox.LabelManaged: "true", sandbox.LabelInstance: e.App.Sandboxes.Instance(),
					sandbox.LabelPool: strconv.FormatInt(tpl, 10), sandbox.LabelPoolOwner: owner,
					sandbox.LabelPoolVersion: "x", sandbox.LabelPoolSince: time.Now().UTC().Format(time.RFC3339),
				}},
				HostConfig: &container.HostConfig{NetworkMode: "none"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := docker.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
				t.Fatal(err)
			}
			return res.ID
		}
		// A live replica with a warm pool.
		live := e.Replica(func(c *config.Config) { c.SandboxPoolSize = 1 })
		bctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); live.App.Background(bctx) }()
		defer func() { cancel(); <-done }()
		eventually(t, time.Minute, "the live replica's warm sandbox", func() bool { return live.App.Sandboxes.Warm(tpl) == 1 })
		livePool := poolOf(t, docker, e, tpl)
		// A process killed without a word, and one whose heartbeat stopped.
		if err := e.DB.Sandboxes().SetSetting(ctx, "pool_heartbeat:stopped", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)); err != nil {
			t.Fatal(err)
		}
		killed, stopped := poolEntry("killed"), poolEntry("stopped")

		// A process of the install starts.
		e.Replica()
		left := poolOf(t, docker, e, tpl)
		for name, id := range map[string]string{"killed": killed, "stopped": stopped} {
			if _, ok := left[id]; ok {
				t.Errorf("the pool container of the %s process survived a start", name)
			}
		}
		for id := range livePool {
			if _, ok := left[id]; !ok {
				t.Errorf("a start removed the live replica's warm sandbox %s", id)
			}
		}
		if len(left) != len(livePool) || live.App.Sandboxes.Warm(tpl) != 1 {
			t.Fatalf("after a start: %v, live pool %v", left, livePool)
		}
		if v, err := e.DB.Sandboxes().Setting(ctx, "pool_heartbeat:stopped"); err != nil || v != "" {
			t.Fatalf("the dead process's heartbeat stayed: %q %v", v, err)
		}
	})
}
