package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

// scrape reads /metrics with the token and returns each series (name and
// labels, as written) with its value.
func scrape(t *testing.T, e *apitest.Env, token string) map[string]float64 {
	t.Helper()
	body := e.Get("/metrics", token).Expect(t, http.StatusOK).Body
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestDomainMetrics scrapes /metrics through the real stack before and
// after a failed, a successful and a malformed login, a sandbox's creation,
// stop and start, a laboratory's start and check, and an exam's start and
// practical grading, and checks that each of the domain's series moved by
// what happened.
func TestDomainMetrics(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	const token = "metrics-token-0123456789"
	// A pool size without the pool running: a poolable template's creation
	// finds no warm sandbox (a miss).
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.MetricsToken = token; c.SandboxPoolSize = 1 })
	admin, alice := rootAndAlice(e)
	before := scrape(t, e, token)

	login(e, "alice", "not-her-password").Expect(t, http.StatusUnauthorized)
	login(e, "alice", apitest.Password).Expect(t, http.StatusOK)
	e.Do(apitest.Request{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "alice"}}).Expect(t, http.StatusUnprocessableEntity)

	c := createSandbox(t, e, alice.Token, busyboxTemplate(t, e))
	stopSandbox(t, e, alice.Token, c.ID)
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/start", c.ID), Token: alice.Token}).Expect(t, 200)
	e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID)

	mod := loadFixture(t, e)["shell"]
	labID := createLab(t, e, admin, fmt.Sprintf("slug=metrics-lab&title=Metrics&module_id=%d&template_id=%d", mod, busyboxTemplate(t, e)), fixtureLabBody())
	startLab(t, e, alice.Token, labID)
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/laboratories/%d/check", labID), Token: alice.Token}).Expect(t, 200)

	// An exam with a practical question: its start makes a sandbox, its
	// submission runs the question's check.
	bob := e.CreateUser("bob", auth.RoleStudent)
	ex := examPracticalFixture(t, e, admin, "slug=metrics-exam&title=Metrics")
	ea := startExam(t, e, bob.Token, ex.ID)
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), *ea.ContainerID) })
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/exams/%d/submit", ex.ID), Token: bob.Token,
		Body: map[string]any{"answers": []any{}}}).Expect(t, 200)

	after := scrape(t, e, token)
	for series, want := range map[string]float64{
		`tuxlab_logins_total{outcome="bad_password"}`: 1,
		`tuxlab_logins_total{outcome="ok"}`:           1,
		`tuxlab_logins_total{outcome="invalid"}`:      1,
		`tuxlab_logins_total{outcome="inactive"}`:     0,
		`tuxlab_engine_errors_total{op="create"}`:     0, // internal/metrics tests the count
		`tuxlab_sandbox_create_seconds_count`:         3, // the sandbox, the lab's and the exam's
		`tuxlab_sandbox_start_seconds_count`:          1,
		`tuxlab_sandbox_pool_total{result="miss"}`:    3,
		`tuxlab_sandbox_pool_total{result="hit"}`:     0,
		`tuxlab_check_seconds_count{kind="lab"}`:      3, // one per task
		`tuxlab_check_seconds_count{kind="exam"}`:     1,
		`tuxlab_check_timeouts_total{kind="lab"}`:     0,
		`tuxlab_check_timeouts_total{kind="exam"}`:    0,
	} {
		a, ok := after[series]
		if !ok {
			t.Errorf("/metrics has no %s", series)
			continue
		}
		if got := a - before[series]; got != want {
			t.Errorf("%s moved by %v, want %v", series, got, want)
		}
	}
}
