package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
)

// percentiles reports p50 and p99 of ds in milliseconds.
func percentiles(b *testing.B, ds []time.Duration, name string) {
	slices.Sort(ds)
	at := func(p float64) float64 { return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), name+"-p50-ms")
	b.ReportMetric(at(0.99), name+"-p99-ms")
}

// BenchmarkSandboxCreateToShell measures, per sandbox, the time from
// POST /api/containers/create to a shell that has answered a command over the
// terminal WebSocket, for each seeded template whose image is built: cold
// (the engine creates and starts a container) and warm (the warm pool has one
// ready; the wait for the refill between creations is not counted).
//
//	go test -run - -bench SandboxCreateToShell -benchtime 20x ./internal/httpapi/
func BenchmarkSandboxCreateToShell(b *testing.B) {
	rt := apitest.RequireEngine(b)
	for _, name := range []string{"BusyBox", "Debian"} {
		for _, pool := range []int{0, 1} {
			b.Run(fmt.Sprintf("%s/%s", name, map[int]string{0: "cold", 1: "warm"}[pool]), func(b *testing.B) {
				e := apitest.New(b, "sqlite", func(c *config.Config) { c.SandboxMaxRunning, c.SandboxPoolSize = 1000, pool })
				tpl := templateB(b, e, name)
				if ok, _ := rt.ImageExists(context.Background(), tpl.Image); !ok {
					b.Skipf("image %s is not built", tpl.Image)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); e.App.Background(ctx) }()
				defer func() { cancel(); <-done }()
				u := e.CreateUser("bench", auth.RoleStudent)
				var ds, creates []time.Duration
				for b.Loop() {
					for pool > 0 && e.App.Sandboxes.Warm(tpl.ID) == 0 {
						time.Sleep(10 * time.Millisecond)
					}
					start := time.Now()
					id, created := createAndEcho(b, e, u.Token, tpl.ID)
					ds, creates = append(ds, time.Since(start)), append(creates, created.Sub(start))
					e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", id), Token: u.Token})
				}
				percentiles(b, ds, "create-to-shell")
				percentiles(b, creates, "create")
			})
		}
	}
}

// createAndEcho creates a sandbox of template tpl and waits until its shell
// has run a command over the terminal; created is when the create answered.
func createAndEcho(b *testing.B, e *apitest.Env, token string, tpl int64) (id int64, created time.Time) {
	var c containerBody
	r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: token, Body: map[string]any{"template_id": tpl}})
	if r.Status != 201 {
		b.Fatalf("create: %d %s", r.Status, r.Body)
	}
	json.Unmarshal(r.Body, &c)
	created = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.URL, "http") + fmt.Sprintf("/ws/terminal/%d?token=%s", c.ID, token)
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(websocket.StatusNormalClosure, "")
	conn.Write(ctx, websocket.MessageBinary, []byte("echo rea''dy\n"))
	var out strings.Builder
	for !strings.Contains(out.String(), "ready") {
		_, data, err := conn.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		out.Write(data)
	}
	return c.ID, created
}

// BenchmarkTerminalEcho measures the round trip of one keystroke: a byte sent
// as a binary frame at the shell's prompt until its echo comes back.
//
//	go test -run - -bench TerminalEcho -benchtime 2000x ./internal/httpapi/
func BenchmarkTerminalEcho(b *testing.B) {
	apitest.RequireEngine(b)
	e := apitest.New(b, "sqlite")
	u := e.CreateUser("bench", auth.RoleStudent)
	tpl := busyboxTemplateB(b, e)
	var c containerBody
	r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token, Body: map[string]any{"template_id": tpl}})
	json.Unmarshal(r.Body, &c)
	defer e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/containers/%d", c.ID), Token: u.Token})
	ctx := context.Background()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+fmt.Sprintf("/ws/terminal/%d?token=%s", c.ID, u.Token), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseNow()
	// At the prompt the shell's line editor echoes each key as it comes.
	var seen strings.Builder
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for !strings.Contains(seen.String(), "$ ") {
		_, data, err := conn.Read(wctx)
		if err != nil {
			b.Fatalf("waiting for the prompt: %v; output %q", err, seen.String())
		}
		seen.Write(data)
	}
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		conn.Write(ctx, websocket.MessageBinary, []byte("k"))
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(string(data), "k") {
				break
			}
		}
		ds = append(ds, time.Since(start))
	}
	percentiles(b, ds, "echo")
}

// BenchmarkIdleSandboxMemory reports the memory the engine charges to an idle
// sandbox of each seeded template (averaged over five); templates whose image
// is not built are skipped.
//
//	go test -run - -bench IdleSandboxMemory -benchtime 1x ./internal/httpapi/
func BenchmarkIdleSandboxMemory(b *testing.B) {
	rt := apitest.RequireEngine(b)
	docker, err := client.New(client.FromEnv)
	if err != nil {
		b.Fatal(err)
	}
	defer docker.Close()
	for _, name := range []string{"BusyBox", "Debian"} {
		b.Run(name, func(b *testing.B) {
			e := apitest.New(b, "sqlite", func(c *config.Config) { c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser = 5, 5 })
			u := e.CreateUser("bench", auth.RoleStudent)
			tpl := templateB(b, e, name)
			if ok, _ := rt.ImageExists(context.Background(), tpl.Image); !ok {
				b.Skipf("image %s is not built", tpl.Image)
			}
			for b.Loop() {
				var total uint64
				for range 5 {
					var c containerBody
					r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token, Body: map[string]any{"template_id": tpl.ID}})
					if r.Status != 201 {
						b.Fatalf("create: %d %s", r.Status, r.Body)
					}
					json.Unmarshal(r.Body, &c)
					time.Sleep(time.Second) // let it settle into idleness
					res, err := docker.ContainerStats(context.Background(), engineIDB(b, e, c.ID), client.ContainerStatsOptions{})
					if err != nil {
						b.Fatal(err)
					}
					var st container.StatsResponse
					json.NewDecoder(res.Body).Decode(&st)
					res.Body.Close()
					total += st.MemoryStats.Usage
				}
				b.ReportMetric(float64(total)/5/(1<<20), "MiB/idle-sandbox")
			}
		})
	}
}

func templateB(b *testing.B, e *apitest.Env, name string) templateBody {
	var ts []templateBody
	json.Unmarshal(e.Get("/api/sandbox-templates", "").Body, &ts)
	for _, t := range ts {
		if t.Name == name {
			return t
		}
	}
	b.Fatalf("no %s template", name)
	return templateBody{}
}

func busyboxTemplateB(b *testing.B, e *apitest.Env) int64 { return templateB(b, e, "BusyBox").ID }

func engineIDB(b *testing.B, e *apitest.Env, id int64) string {
	c, err := e.DB.Sandboxes().FindContainerByID(context.Background(), id)
	if err != nil {
		b.Fatal(err)
	}
	return c.EngineID
}
