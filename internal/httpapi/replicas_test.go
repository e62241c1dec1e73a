package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

// TestReplicasServeOneSandbox: two replicas on one database and one engine
// serve any request (replicasServeOneSandbox). (A user disabled through one
// replica is refused at the other: TestReplicasAgreeOnAccounts.) The same
// on Kubernetes: TestKubeReplicasServeOneSandbox.
func TestReplicasServeOneSandbox(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, replicasServeOneSandbox)
}

// replicasServeOneSandbox: a sandbox created through a gets a terminal
// through a's replica b (the echo comes back), and a laboratory started
// through a is checked through b: failed fresh, refused through a within the
// interval between checks (which counts on the attempt's row, whichever
// replica checked), and passed through b once the learner's fix is typed in
// the lab sandbox's terminal through b.
func replicasServeOneSandbox(t *testing.T, a *apitest.Env) {
	b := a.Replica()
	admin, alice := rootAndAlice(a)
	c := createSandbox(t, a, alice.Token, busyboxTemplate(t, a))
	tc := b.OpenTerminal(t, c.TerminalURL, alice.Token, 80, 24)
	tc.Exchange("echo through-b-$((6*7))\n", "through-b-42")
	tc.End()

	id := oneTaskLab(t, a, admin, "replicas", "#!/bin/sh\n# lab-check-secret-replicas\n[ -f /home/learner/done ] || { echo 'FAIL: not done'; exit 1; }\n")
	at := startLab(t, a, alice.Token, id)
	check := apitest.Request{Method: "POST", Path: labPath(id, "check"), Token: alice.Token}
	if taskPassed(t, b.Do(check)) {
		t.Fatal("the check through b passed before the task was done")
	}
	a.Do(check).Expect(t, http.StatusTooManyRequests)
	lab := b.OpenTerminal(t, terminalPath(*at.ContainerID), alice.Token, 80, 24)
	lab.Exchange("touch /home/learner/done && echo fixed-$((40+2))\n", "fixed-42")
	lab.End()
	var r *apitest.Response
	eventually(t, time.Minute, "the interval between checks to pass", func() bool {
		if r = b.Do(check); r.Status == http.StatusTooManyRequests {
			time.Sleep(200 * time.Millisecond)
			return false
		}
		return true
	})
	if !taskPassed(t, r) {
		t.Fatalf("the check through b failed after the learner's fix: %s", r.Body)
	}
}

// taskPassed reads the answer r of a one-task laboratory's check, which must
// be a 200: whether its task passed.
func taskPassed(t *testing.T, r *apitest.Response) bool {
	t.Helper()
	var checked labAttemptBody
	r.Expect(t, http.StatusOK).JSON(t, &checked)
	if len(checked.Tasks) != 1 {
		t.Fatalf("a one-task laboratory's check answered %s", r.Body)
	}
	return checked.Tasks[0].Passed
}

// TestReplicasHoldTheHostCap: the host cap holds across two replicas
// (replicasHoldTheHostCap); on Kubernetes: TestKubeReplicasHoldTheHostCap.
func TestReplicasHoldTheHostCap(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, replicasHoldTheHostCap, oneRunning)
}

// oneRunning leaves room for one running sandbox on the host.
func oneRunning(c *config.Config) { c.SandboxMaxRunning = 1 }

// replicasHoldTheHostCap: with room for one running sandbox on the host
// (oneRunning), two learners creating at once, one through a and one
// through its replica, get one sandbox between them: the other is told the
// platform is at capacity.
func replicasHoldTheHostCap(t *testing.T, a *apitest.Env) {
	b := a.Replica()
	tpl := busyboxTemplate(t, a)
	for round := range 3 {
		u1 := a.CreateUser("one"+string(rune('a'+round)), auth.RoleStudent)
		u2 := a.CreateUser("two"+string(rune('a'+round)), auth.RoleStudent)
		type answer struct {
			r   *apitest.Response
			err error
		}
		answers := make(chan answer, 2)
		for _, call := range []struct {
			env   *apitest.Env
			token string
		}{{a, u1.Token}, {b, u2.Token}} {
			go func() {
				r, err := call.env.Send(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: call.token,
					Body: map[string]any{"template_id": tpl}})
				answers <- answer{r, err}
			}()
		}
		statuses := map[int]int{}
		for range 2 {
			ans := <-answers
			if ans.err != nil {
				t.Fatal(ans.err)
			}
			statuses[ans.r.Status]++
			if ans.r.Status == http.StatusCreated {
				var c containerBody
				ans.r.JSON(t, &c)
				if err := a.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusServiceUnavailable] != 1 {
			t.Fatalf("round %d: statuses %v, want one 201 and one 503", round, statuses)
		}
	}
}

// TestSandboxLeaseMoves: of two replicas running the background work, one
// holds the sandbox lease (reconciliation and lifecycle sweep) and keeps it
// while it lives; when it is killed (its work stops without giving the lease
// back) the other takes it once it expires; a clean stop gives it back at once.
func TestSandboxLeaseMoves(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, a *apitest.Env) {
		b := a.Replica()
		ctx := context.Background()
		holder := func() (string, time.Time) {
			t.Helper()
			h, until, err := a.DB.Leases().LeaseHolder(ctx, app.LeaseSandboxes)
			if err != nil {
				t.Fatal(err)
			}
			return h, until
		}
		// a's sandbox work alone, as a killed process leaves it: nothing releases its lease.
		actx, killA := context.WithCancel(ctx)
		aDone := make(chan struct{})
		go func() { defer close(aDone); a.App.Sandboxes.Run(actx, a.Config.SandboxReconcileInterval) }()
		defer func() { killA(); <-aDone }()
		eventually(t, 30*time.Second, "a to take the lease", func() bool { h, _ := holder(); return h == a.App.Holder() })

		bctx, stopB := context.WithCancel(ctx)
		bDone := make(chan struct{})
		go func() { defer close(bDone); b.App.Background(bctx) }()
		defer func() { stopB(); <-bDone }()
		// a renews its lease three times while b asks for it every round too.
		for range 3 {
			_, before := holder()
			eventually(t, 30*time.Second, "a to renew its lease", func() bool {
				h, until := holder()
				if h != a.App.Holder() {
					t.Fatalf("the lease moved to %q while its holder lived", h)
				}
				return until.After(before)
			})
		}

		killA()
		<-aDone
		if h, _ := holder(); h != a.App.Holder() {
			t.Fatalf("a killed process gave its lease back (holder %q)", h)
		}
		eventually(t, 30*time.Second, "b to take the lease of the killed a", func() bool { h, _ := holder(); return h == b.App.Holder() })

		stopB()
		<-bDone
		if h, _ := holder(); h != "" {
			t.Fatalf("a clean stop kept the lease (holder %q)", h)
		}
	}, func(c *config.Config) { c.SandboxReconcileInterval = 200 * time.Millisecond })
}

// TestCreationCutShortByAKill: a replica killed while it created a sandbox
// leaves a row in creating; another replica's reconciliation marks it failed
// once the creation's grace is over, so the learner sees why and can delete
// it (and the orphan container, if the engine had made one, goes: see
// internal/sandbox's reconciliation tests).
func TestCreationCutShortByAKill(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, a *apitest.Env) {
		clock := newClock()
		b := a.Replica(withClock(clock))
		alice := a.CreateUser("alice", auth.RoleStudent)
		now := time.Now().UTC().Truncate(time.Microsecond)
		c := &sandbox.Container{UserID: alice.ID, TemplateID: busyboxTemplate(t, a), Kind: sandbox.KindContainer, Name: "cut short",
			Status: sandbox.StatusCreating, CreatedAt: now, LastActivityAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := a.DB.Sandboxes().CreateContainer(context.Background(), c, func([]*sandbox.Container, int) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := b.App.Sandboxes.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		var got containerBody
		b.Get("/api/containers/"+strconv.FormatInt(c.ID, 10), alice.Token).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Status != "creating" {
			t.Fatalf("within the grace a creation in progress is left alone; status %q", got.Status)
		}
		clock.advance(3 * time.Minute)
		if err := b.App.Sandboxes.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		b.Get("/api/containers/"+strconv.FormatInt(c.ID, 10), alice.Token).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Status != "error" || got.StatusDetail == "" {
			t.Fatalf("after the grace: status %q (%q), want error with a detail", got.Status, got.StatusDetail)
		}
		b.Do(apitest.Request{Method: "DELETE", Path: "/api/containers/" + strconv.FormatInt(c.ID, 10), Token: alice.Token}).Expect(t, http.StatusOK)
	})
}

// TestReplicasBoundResetMails: the bound on password reset mails an account
// receives in an hour holds across replicas. Each replica's own limiter lets
// an address ask auth.ResetsPerAddressPerHour times; asked that many times
// through each of two replicas, the account is sent that many mails, not
// twice as many, and every answer is the same 200 (a refusal here would tell
// who has an account).
func TestReplicasBoundResetMails(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, a *apitest.Env) {
		b := a.Replica() // no mail worker runs: what is asked stays queued
		a.CreateUser("carol", auth.RoleStudent)
		for _, env := range []*apitest.Env{a, b} {
			for range auth.ResetsPerAddressPerHour {
				forgot(env, "carol@tuxlab.org").Expect(t, http.StatusOK)
			}
		}
		waiting, _, err := a.DB.Mail().CountMail(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if waiting != auth.ResetsPerAddressPerHour {
			t.Fatalf("%d reset mails queued for one account, want %d", waiting, auth.ResetsPerAddressPerHour)
		}
	}, noSMTP)
}
