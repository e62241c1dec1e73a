package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/store/storetest"
)

// BenchmarkTwoReplicas measures two replicas on one PostgreSQL database and
// the real engine, with no balancer: four learners at once, each iteration
// creating a BusyBox sandbox through one replica, opening its terminal
// through the other, timing 20 keystroke echoes there and deleting the
// sandbox through the first (the replicas alternate). It reports sandboxes
// created and used per minute (create, terminal, echoes and delete: the whole
// cycle, four at a time) and the echo round trip's p50 and p99 through the
// replica that did not create the sandbox.
//
//	go test -run - -bench 'TwoReplicas$' -benchtime 40x ./internal/httpapi/
func BenchmarkTwoReplicas(b *testing.B) {
	apitest.RequireEngine(b)
	benchTwoReplicas(b)
}

// BenchmarkTwoReplicasKube is BenchmarkTwoReplicas with the sandboxes as
// pods on the cluster of KUBECONFIG (scripts/kube-up.sh's):
//
//	KUBECONFIG=/var/lib/tuxlab/kube/admin.kubeconfig go test -run - -bench TwoReplicasKube -benchtime 40x ./internal/httpapi/
func BenchmarkTwoReplicasKube(b *testing.B) {
	benchTwoReplicas(b, apitest.RequireKube(b))
}

// benchTwoReplicas runs BenchmarkTwoReplicas's load on two replicas
// configured by opts.
func benchTwoReplicas(b *testing.B, opts ...apitest.Option) {
	if os.Getenv(storetest.PostgresEnv) == "" {
		b.Skipf("%s is not set: replicas share a PostgreSQL database", storetest.PostgresEnv)
	}
	a := apitest.New(b, "postgres", append(opts, func(c *config.Config) { c.SandboxMaxRunning = 1000 })...)
	r := a.Replica()
	tpl := busyboxTemplateB(b, a)
	const workers = 4
	users := make([]*apitest.User, workers)
	for i := range users {
		users[i] = a.CreateUser(fmt.Sprintf("bench%d", i), auth.RoleStudent)
	}
	var (
		next   atomic.Int64
		mu     sync.Mutex
		echoes []time.Duration
		wg     sync.WaitGroup
		failed atomic.Value
	)
	b.ResetTimer()
	began := time.Now()
	for w := range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				creator, other := a, r
				if i%2 == 1 {
					creator, other = r, a
				}
				ds, err := replicaCycle(creator, other, users[w].Token, tpl)
				if err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				echoes = append(echoes, ds...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Minutes(), "sandboxes/min")
	percentiles(b, echoes, "echo")
}

// replicaCycle creates a sandbox through creator, times 20 echoes through a
// terminal of other's, and deletes the sandbox through creator.
func replicaCycle(creator, other *apitest.Env, token string, tpl int64) ([]time.Duration, error) {
	resp, err := creator.Send(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: token, Body: map[string]any{"template_id": tpl}})
	if err != nil {
		return nil, err
	}
	if resp.Status != 201 {
		return nil, fmt.Errorf("create: %d %s", resp.Status, resp.Body)
	}
	var c containerBody
	json.Unmarshal(resp.Body, &c)
	defer creator.Send(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: token})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(other.URL, "http")+fmt.Sprintf("/ws/terminal/%d?token=%s", c.ID, token), nil)
	if err != nil {
		return nil, err
	}
	defer conn.CloseNow()
	var seen strings.Builder
	for !strings.Contains(seen.String(), "$ ") && !strings.Contains(seen.String(), "# ") {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("waiting for the prompt: %w; output %q", err, seen.String())
		}
		seen.Write(data)
	}
	var ds []time.Duration
	for range 20 {
		start := time.Now()
		conn.Write(ctx, websocket.MessageBinary, []byte("k"))
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return nil, err
			}
			if strings.Contains(string(data), "k") {
				break
			}
		}
		ds = append(ds, time.Since(start))
	}
	conn.Close(websocket.StatusNormalClosure, "")
	return ds, nil
}
