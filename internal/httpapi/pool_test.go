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
		res, err := e.App.Sandboxes.Exec(context.Background(), sandbox.Actor{UserID: alice.ID}, c.ID, sandbox.Script{Text: "id -un; hostname"})
		if err != nil || !res.OK() || res.Stdout != "learner\ntuxlab\n" {
			t.Fatalf("shell in a handed-out sandbox: %+v %v", res, err)
		}
		// Its first terminal takes the shell the pool started, at the size asked.
		tc := dialSized(t, e, c.ID, alice.Token, 132, 43)
		tc.send("stty size; echo warm-$((6*7))\n")
		tc.waitFor("43 132\r\nwarm-42")
		tc.conn.Close(1000, "")
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

// TestWarmPoolLeftovers: reconciliation removes a pool container a dead
// process left (older than twice the pool's maximum age) and leaves a young
// one of another process alone.
func TestWarmPoolLeftovers(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	docker, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	tpl := busyboxTemplate(t, e)
	ctx := context.Background()
	poolEntry := func(since time.Time) string {
		res, err := docker.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: apitest.TestImage, Cmd: []string{"true"}, Labels: map[string]string{
				sandbox.LabelManaged: "true", sandbox.LabelInstance: e.App.Sandboxes.Instance(),
				sandbox.LabelPool: strconv.FormatInt(tpl, 10), sandbox.LabelPoolOwner: "elsewhere",
				sandbox.LabelPoolVersion: "x", sandbox.LabelPoolSince: since.UTC().Format(time.RFC3339),
			}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	dead, alive := poolEntry(time.Now().Add(-3*time.Hour)), poolEntry(time.Now())
	if err := e.App.Sandboxes.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	left := poolOf(t, docker, e, tpl)
	if _, ok := left[dead]; ok {
		t.Fatal("a dead process's pool container survived reconciliation")
	}
	if _, ok := left[alive]; !ok || len(left) != 1 {
		t.Fatalf("another process's young pool container was removed: %v", left)
	}
}
