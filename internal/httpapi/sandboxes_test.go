package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/moby/moby/client"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/app"
	"tuxlab/internal/auth"
	"tuxlab/internal/config"
	"tuxlab/internal/sandbox"
)

type containerBody struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	TemplateID   int64   `json:"template_id"`
	UserID       int64   `json:"user_id"`
	Status       string  `json:"status"`
	StatusDetail string  `json:"status_detail"`
	StartedAt    *string `json:"started_at"`
	StoppedAt    *string `json:"stopped_at"`
	ExpiresAt    string  `json:"expires_at"`
	TerminalURL  string  `json:"terminal_url"`
	Kind         string  `json:"kind"`
}

type templateBody struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Image  string `json:"image"`
	Limits struct {
		MemoryMB  int `json:"memory_mb"`
		PidsLimit int `json:"pids_limit"`
		DiskMB    int `json:"disk_mb"`
	} `json:"limits"`
	CapAdd          []string `json:"cap_add"`
	NoNewPrivileges bool     `json:"no_new_privileges"`
	Kind            string   `json:"kind"`
	ExtraDisksMB    []int    `json:"extra_disks_mb"`
}

// busyboxTemplate returns the id of the seeded BusyBox template.
func busyboxTemplate(t *testing.T, e *apitest.Env) int64 {
	t.Helper()
	return templateNamed(t, e, "BusyBox")
}

// templateNamed returns the id of the seeded template called name.
func templateNamed(t *testing.T, e *apitest.Env, name string) int64 {
	t.Helper()
	var ts []templateBody
	e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &ts)
	for _, tpl := range ts {
		if tpl.Name == name {
			return tpl.ID
		}
	}
	t.Fatalf("no template %q in %+v", name, ts)
	return 0
}

func createSandbox(t *testing.T, e *apitest.Env, token string, templateID int64) containerBody {
	t.Helper()
	var c containerBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: token,
		Body: map[string]any{"template_id": templateID}}).Expect(t, http.StatusCreated).JSON(t, &c)
	t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID) })
	return c
}

// learnerSandbox starts a server configured by opts, with a learner who
// has a running sandbox of the seeded template called template.
func learnerSandbox(t *testing.T, template string, opts ...apitest.Option) (*apitest.Env, *apitest.User, containerBody) {
	t.Helper()
	e := apitest.New(t, "sqlite", opts...)
	u := e.CreateUser("learner", auth.RoleStudent)
	return e, u, createSandbox(t, e, u.Token, templateNamed(t, e, template))
}

// engineID reads a container's engine id from the store (the API does not show it).
func engineID(t *testing.T, e *apitest.Env, id int64) string {
	t.Helper()
	c, err := e.DB.Sandboxes().FindContainerByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c.EngineID
}

// terminalPath is the terminal_url of sandbox id.
func terminalPath(id int64) string {
	return fmt.Sprintf("/ws/terminal/%d", id)
}

func TestSandboxEndToEnd(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		c := createSandbox(t, e, u.Token, tpl)
		if c.Status != "running" || c.StartedAt == nil || c.TemplateID != tpl || c.Name != "BusyBox" || c.TerminalURL != fmt.Sprintf("/ws/terminal/%d", c.ID) {
			t.Fatalf("created %+v", c)
		}
		list := listSandboxes(t, e, u.Token)
		if len(list) != 1 || list[0].ID != c.ID || list[0].Status != "running" {
			t.Fatalf("list %+v", list)
		}

		// A terminal: type, read back, resize, see the new size.
		tc := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		tc.Exchange("echo hello\n", "hello\r\n")
		tc.SendControl(map[string]any{"type": "resize", "cols": 100, "rows": 33})
		tc.Exchange("stty size\n", "33 100")
		tc.Exchange("id -un\n", "learner")
		tc.SendControl(map[string]any{"type": "bogus"})
		tc.AwaitControl("error", apitest.TerminalWait)

		// A second terminal at the same time, with its own shell.
		tc2 := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		tc2.Exchange("echo second-$((40+2))\n", "second-42")
		tc.Exchange("echo first-$((1+1))\n", "first-2")
		if strings.Contains(tc.Output(), "second-42") {
			t.Fatal("terminals share output")
		}

		// Exiting the shell sends its code and closes the socket.
		tc2.Type("exit 3\n")
		if m := tc2.AwaitControl("exit", apitest.TerminalWait); m["code"] != float64(3) {
			t.Fatalf("exit message %v", m)
		}

		// Closing the socket ends its shell, even one busy with a command.
		from := len(tc.Output())
		tc.Type("printf 'pid=%s=\\n' $$\n")
		pid := tc.Await(regexp.MustCompile(`pid=([0-9]+)=`), from, apitest.TerminalWait)[1]
		tc.Type("sleep 300\n")
		time.Sleep(300 * time.Millisecond)
		tc.Type("sleep 300\n")
		tc.Hangup()
		tc3 := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
		// The answer on a line of its own: the typed line's echo holds both words.
		answer := regexp.MustCompile(`(?m)^shell-(alive|gone)\.\r?$`)
		for i := 0; ; i++ {
			from := len(tc3.Output())
			tc3.Type("test -d /proc/" + pid + " && echo shell-alive. || echo shell-gone.\n")
			if tc3.Await(answer, from, apitest.TerminalWait)[1] == "gone" {
				break
			}
			if i == 100 {
				t.Fatalf("the closed terminal's shell %s still runs: %s", pid, tc3.Tail())
			}
			time.Sleep(100 * time.Millisecond)
		}

		// Stop, then the terminal is refused; start again; delete.
		var got containerBody
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/stop", c.ID), Token: u.Token}).Expect(t, 200).JSON(t, &got)
		if got.Status != "stopped" || got.StoppedAt == nil {
			t.Fatalf("stopped %+v", got)
		}
		e.DialTerminal(t, "/ws/terminal/"+fmt.Sprintf("%d?token=%s", c.ID, u.Token), nil).ExpectClosed(http.StatusConflict, "Container is not running: start it first")
		stopSandbox(t, e, u.Token, c.ID)
		e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/start", c.ID), Token: u.Token}).Expect(t, 200).JSON(t, &got)
		if got.Status != "running" || got.StoppedAt != nil {
			t.Fatalf("restarted %+v", got)
		}
		e.Get(fmt.Sprintf("/api/containers/%d", c.ID), u.Token).Expect(t, 200).JSON(t, &got)
		if got.Status != "running" {
			t.Fatalf("get %+v", got)
		}
		eid := engineID(t, e, c.ID)
		deleteSandbox(t, e, u.Token, c.ID)
		e.Get(fmt.Sprintf("/api/containers/%d", c.ID), u.Token).Expect(t, 404)
		if _, err := e.App.Sandboxes.Get(context.Background(), actor.AsAdmin(), c.ID); err == nil {
			t.Fatal("row survived delete")
		}
		rt := apitest.RequireEngine(t)
		if _, err := rt.Inspect(context.Background(), eid); err == nil {
			t.Fatal("engine container survived delete")
		}
	})
}

func TestSandboxOwnership(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		owner := e.CreateUser("owner", auth.RoleStudent)
		other := e.CreateUser("other", auth.RoleStudent)
		root := e.CreateUser("root", auth.RoleAdmin)
		c := createSandbox(t, e, owner.Token, busyboxTemplate(t, e))
		id := fmt.Sprint(c.ID)
		for _, req := range []apitest.Request{
			{Method: "GET", Path: "/api/containers/" + id},
			{Method: "POST", Path: "/api/containers/" + id + "/start"},
			{Method: "POST", Path: "/api/containers/" + id + "/stop"},
			{Method: "DELETE", Path: "/api/containers/" + id},
		} {
			req.Token = other.Token
			if r := e.Do(req).Expect(t, 404); r.Detail() != "Container not found" {
				t.Fatalf("%s %s: %q", req.Method, req.Path, r.Detail())
			}
		}
		// The same answer as an id that does not exist.
		if r := e.Get("/api/containers/999999", other.Token).Expect(t, 404); r.Detail() != "Container not found" {
			t.Fatal(r.Detail())
		}
		e.DialTerminal(t, "/ws/terminal/"+id+"?token="+other.Token, nil).ExpectClosed(404, "Container not found")
		e.DialTerminal(t, "/ws/terminal/"+id+"?token=not-a-token", nil).ExpectClosed(401, "Could not validate credentials")
		e.DialTerminal(t, "/ws/terminal/"+id+"?token="+owner.Token, http.Header{"Origin": {"https://evil.example.net"}}).ExpectClosed(403, "Origin not allowed")
		list := listSandboxes(t, e, other.Token)
		if len(list) != 0 {
			t.Fatalf("other user sees %+v", list)
		}
		// Still running, untouched.
		var got containerBody
		e.Get("/api/containers/"+id, owner.Token).Expect(t, 200).JSON(t, &got)
		if got.Status != "running" {
			t.Fatalf("owner's sandbox: %+v", got)
		}
		// Admins see all.
		e.Get("/api/admin/containers", root.Token).Expect(t, 200).JSON(t, &list)
		if len(list) != 1 || list[0].UserID != owner.ID {
			t.Fatalf("admin list %+v", list)
		}
		e.Get("/api/admin/containers", other.Token).Expect(t, 403)
		var stats struct {
			Sandboxes struct {
				Containers, Running, Templates int
				EngineAvailable                bool `json:"engine_available"`
			} `json:"sandboxes"`
		}
		e.Get("/api/admin/stats", root.Token).Expect(t, 200).JSON(t, &stats)
		if s := stats.Sandboxes; s.Containers != 1 || s.Running != 1 || s.Templates != 3 || !s.EngineAvailable {
			t.Fatalf("sandbox stats %+v", s)
		}
		e.Get("/api/containers/"+id, root.Token).Expect(t, 200)
	})
}

func TestSandboxQuotas(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		first := createSandbox(t, e, u.Token, tpl)
		create := func(token string) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: token, Body: map[string]any{"template_id": tpl, "name": "extra"}})
		}
		if r := create(u.Token).Expect(t, http.StatusConflict); !strings.Contains(r.Detail(), "Running sandbox quota reached") {
			t.Fatalf("detail %q", r.Detail())
		}
		stopSandbox(t, e, u.Token, first.ID)
		var second containerBody
		create(u.Token).Expect(t, http.StatusCreated).JSON(t, &second)
		t.Cleanup(func() { e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), second.ID) })
		if second.Name != "extra" {
			t.Fatalf("name %q", second.Name)
		}
		if r := create(u.Token).Expect(t, http.StatusConflict); !strings.Contains(r.Detail(), "Sandbox quota reached") {
			t.Fatalf("detail %q", r.Detail())
		}
		// Starting the stopped one would make two running.
		if r := e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/start", first.ID), Token: u.Token}).Expect(t, http.StatusConflict); !strings.Contains(r.Detail(), "Running sandbox quota") {
			t.Fatalf("detail %q", r.Detail())
		}
		// The host-wide cap is the platform's, not the learner's: 503 with Retry-After.
		other := e.CreateUser("other", auth.RoleStudent)
		r := create(other.Token).Expect(t, http.StatusServiceUnavailable)
		if !strings.Contains(r.Detail(), "at capacity") || r.Header.Get("Retry-After") == "" {
			t.Fatalf("host cap: %q %v", r.Detail(), r.Header)
		}
		// Validation.
		for _, body := range []any{map[string]any{}, map[string]any{"template_id": "one"}, map[string]any{"template_id": 99999}, map[string]any{"template_id": tpl, "name": strings.Repeat("n", 65)}} {
			e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token, Body: body}).Expect(t, 422)
		}
	}, func(c *config.Config) { c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser, c.SandboxMaxRunning = 2, 1, 1 })
}

func TestSandboxHardeningFromEngine(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	root := e.CreateUser("root", auth.RoleAdmin)
	docker, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	inspect := func(id int64) client.ContainerInspectResult {
		res, err := docker.ContainerInspect(context.Background(), engineID(t, e, id), client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// The BusyBox template as seeded.
	c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
	res := inspect(c.ID).Container
	hc := res.HostConfig
	if hc.Privileged || !slices.Equal(hc.CapDrop, []string{"ALL"}) || len(hc.CapAdd) != 0 ||
		!slices.Contains(hc.SecurityOpt, "no-new-privileges:true") || string(hc.NetworkMode) != "none" ||
		hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 || hc.NanoCPUs != 500_000_000 || hc.PidsLimit == nil || *hc.PidsLimit != 64 ||
		len(hc.Binds) != 0 || hc.Init == nil || !*hc.Init || hc.LogConfig.Type != "none" {
		t.Fatalf("BusyBox host config not hardened: %+v", hc)
	}
	// One volume: the trusted tools, read-only; besides, only LXCFS's files,
	// read-only (docs/sandboxes.md).
	if !onlyToolsAndLXCFS(res.Mounts) {
		t.Fatalf("mounts %+v", res.Mounts)
	}
	labels := res.Config.Labels
	if labels[sandbox.LabelManaged] != "true" || labels[sandbox.LabelContainer] != strconv.FormatInt(c.ID, 10) ||
		labels[sandbox.LabelUser] != strconv.FormatInt(u.ID, 10) || labels[sandbox.LabelInstance] != e.App.Sandboxes.Instance() {
		t.Fatalf("labels %v", labels)
	}
	// The keep-alive runs as root, so the learner cannot end the sandbox with
	// kill 1; SIGTERM does not stop it either, SIGRTMIN+3 does.
	if res.Config.User != "0" || res.Config.StopSignal != "SIGRTMIN+3" {
		t.Fatalf("main process runs as %q, stop signal %q", res.Config.User, res.Config.StopSignal)
	}

	// The Debian template's settings (sudo needs setuid, so no no-new-privileges,
	// and a small capability set), applied to the test image.
	var debian templateBody
	for _, tpl := range sandbox.DefaultTemplates() {
		if tpl.Name == "Debian" {
			q := fmt.Sprintf("name=debian-like&image=%s&memory_mb=%d&cpu_millis=%d&pids_limit=%d&cap_add=%s&no_new_privileges=false&network=true&shell=/bin/sh+-l",
				apitest.TestImage, tpl.MemoryMB, tpl.CPUMillis, tpl.PidsLimit, strings.Join(tpl.CapAdd, ","))
			e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?" + q, Token: root.Token}).Expect(t, 201).JSON(t, &debian)
			deleteSandbox(t, e, u.Token, c.ID)
			d := createSandbox(t, e, u.Token, debian.ID)
			res := inspect(d.ID).Container
			hc := res.HostConfig
			caps := []string{}
			for _, c := range hc.CapAdd { // the engine names them CAP_X
				caps = append(caps, strings.TrimPrefix(c, "CAP_"))
			}
			slices.Sort(caps)
			want := slices.Clone(tpl.CapAdd)
			slices.Sort(want)
			if hc.Privileged || !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(caps, want) ||
				slices.Contains(hc.SecurityOpt, "no-new-privileges:true") ||
				string(hc.NetworkMode) != fmt.Sprintf("tuxlab-sandbox-%s-u%d", e.App.Sandboxes.Instance()[:8], u.ID) ||
				hc.Memory != int64(tpl.MemoryMB)<<20 || *hc.PidsLimit != int64(tpl.PidsLimit) {
				t.Fatalf("Debian-like host config: %+v", hc)
			}
			// The learner's own internal network has no route out of the host.
			nw, err := docker.NetworkInspect(context.Background(), string(hc.NetworkMode), client.NetworkInspectOptions{})
			if err != nil || !nw.Network.Internal {
				t.Fatalf("sandbox network is not internal: %+v %v", nw.Network, err)
			}
		}
	}
	if debian.ID == 0 {
		t.Fatal("no Debian default template")
	}
	// Templates cannot ask for dangerous capabilities.
	if r := e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=evil&image=x&cap_add=SYS_ADMIN", Token: root.Token}).Expect(t, 422); !strings.Contains(string(r.Body), "SYS_ADMIN is not allowed") {
		t.Fatalf("body %s", r.Body)
	}
}

func TestSandboxRoutesWithoutEngine(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		root := e.CreateUser("root", auth.RoleAdmin)
		// Templates are in the database: still served.
		tpl := busyboxTemplate(t, e)
		for _, req := range []apitest.Request{
			{Method: "POST", Path: "/api/containers/create", Body: map[string]any{"template_id": tpl}},
			{Method: "GET", Path: "/api/containers/sandbox"},
		} {
			req.Token = u.Token
			r := e.Do(req).Expect(t, http.StatusServiceUnavailable)
			if r.Detail() != "Sandbox runtime unavailable" || r.Header.Get("Retry-After") == "" {
				t.Fatalf("%s %s: %q %v", req.Method, req.Path, r.Detail(), r.Header)
			}
		}
		e.Get("/api/admin/containers", root.Token).Expect(t, 200)
		e.Get("/healthz", "").Expect(t, 200)
	}, func(c *config.Config) { c.DockerHost = "unix:///nonexistent/docker.sock" })
}

func TestSandboxesSurviveRestart(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		c := createSandbox(t, e, u.Token, busyboxTemplate(t, e))
		// A second server process on the same database and engine.
		ctx := context.Background()
		log := e.App.Log
		db, err := app.Open(ctx, e.Config, log)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		restarted, err := app.New(ctx, e.Config, log, db)
		if err != nil {
			t.Fatal(err)
		}
		if err := restarted.Sandboxes.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if restarted.Sandboxes.Instance() != e.App.Sandboxes.Instance() {
			t.Fatal("the instance id changed across a restart")
		}
		cs, err := restarted.Sandboxes.List(ctx, actor.User(u.ID))
		if err != nil || len(cs) != 1 || cs[0].ID != c.ID || cs[0].Status != sandbox.StatusRunning {
			t.Fatalf("after restart: %+v %v", cs, err)
		}
	})
}

// openTerminal starts a server configured by opt, creates a BusyBox sandbox
// for a new learner and opens a terminal on it.
func openTerminal(t *testing.T, opt apitest.Option) *apitest.Terminal {
	t.Helper()
	e, u, c := learnerSandbox(t, "BusyBox", opt)
	return e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
}

func TestTerminalWarnsBeforeItEnds(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	t.Run("idle", func(t *testing.T) {
		tc := openTerminal(t, func(c *config.Config) { c.TerminalIdleTimeout = 2 * time.Second })
		if m := tc.AwaitControl("expiring", apitest.TerminalWait); m["reason"] != "idle" {
			t.Fatalf("warning %v", m)
		}
		// Then the socket closes normally.
		if err := tc.Ended(time.Minute); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Fatalf("closed with %v", err)
		}
	})
	t.Run("lifetime", func(t *testing.T) {
		tc := openTerminal(t, func(c *config.Config) { c.SandboxMaxLifetime = 30 * time.Second })
		m := tc.AwaitControl("expiring", apitest.TerminalWait)
		if secs, ok := m["seconds"].(float64); m["reason"] != "lifetime" || !ok || secs > 30 {
			t.Fatalf("warning %v", m)
		}
	})
}

func TestAdminTemplates(t *testing.T) {
	t.Parallel()
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		root := e.CreateUser("root", auth.RoleAdmin)
		u := e.CreateUser("learner", auth.RoleStudent)
		do := func(method, path string) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Token: root.Token})
		}
		var tpl templateBody
		do("POST", "/api/admin/sandbox-templates?name=Alpine-ish&image=registry.tuxlab.org/sandbox/alpine:3.20&memory_mb=128&pids_limit=100&cap_add=cap_chown,KILL").Expect(t, 201).JSON(t, &tpl)
		if tpl.Limits.MemoryMB != 128 || tpl.Limits.PidsLimit != 100 || strings.Join(tpl.CapAdd, ",") != "CHOWN,KILL" || !tpl.NoNewPrivileges {
			t.Fatalf("created %+v", tpl)
		}
		do("POST", "/api/admin/sandbox-templates?name=Alpine-ish&image=x").Expect(t, 409)
		do("PUT", fmt.Sprintf("/api/admin/sandbox-templates/%d?memory_mb=256&description=Smaller", tpl.ID)).Expect(t, 200).JSON(t, &tpl)
		if tpl.Limits.MemoryMB != 256 || tpl.Limits.PidsLimit != 100 {
			t.Fatalf("updated %+v", tpl)
		}
		var list []templateBody
		e.Get("/api/sandbox-templates", "").Expect(t, 200).JSON(t, &list)
		if len(list) != 4 {
			t.Fatalf("templates %+v", list)
		}
		for _, tt := range []struct{ path, loc string }{
			{"?name=x", "query.image"},
			{"?name=x&image=x&kind=vm", "query.kind"},
			{"?name=x&image=x&extra_disks_mb=1024", "query.extra_disks_mb"},           // a container has no blank disks
			{"?name=x&image=x&extra_disks_mb=a,b", "query.extra_disks_mb"},            // not integers
			{"?name=x&image=current&kind=machine&memory_mb=65536", "query.memory_mb"}, // past the host's bound
			{"?name=x&image=current&kind=machine&cpu_millis=1500", "query.cpu_millis"},
			{"?name=x&image=current&kind=machine&cpu_millis=64000", "query.cpu_millis"},
			{"?name=x&image=current&kind=machine&extra_disks_mb=16,16,16,16,16", "query.extra_disks_mb"},
			{"?name=x&image=current&kind=machine&extra_disks_mb=1048576", "query.extra_disks_mb"},
			{"?name=x&image=current&kind=machine&disk_mb=100", "query.disk_mb"},
			{"?name=x&image=current&kind=machine&runtime=runsc", "query.runtime"},
			{"?name=x&image=tuxlab/sandbox-debian:latest&kind=machine", "query.image"},
			{"?name=x&image=Not%20An%20Image", "query.image"},
			{"?name=x&image=x&memory_mb=1", "query.memory_mb"},
			{"?name=x&image=x&runtime=kata", "query.runtime"},
			{"?name=x&image=x&shell=bash", "query.shell"},
			{"?name=x&image=x&cap_add=NET_ADMIN", "query.cap_add"},
			{"?name=x&image=x&network=perhaps", "query.network"},
		} {
			r := do("POST", "/api/admin/sandbox-templates"+tt.path).Expect(t, 422)
			if got := strings.Join(locs(t, r), ","); got != tt.loc {
				t.Fatalf("%s: locs %s", tt.path, got)
			}
		}
		// A machine template within the host's bounds; turning the container
		// template into a machine checks its limits as a machine's.
		var m templateBody
		do("POST", "/api/admin/sandbox-templates?name=Two+disks&image=current&kind=machine&memory_mb=768&cpu_millis=1000&extra_disks_mb=512,2048").Expect(t, 201).JSON(t, &m)
		if m.Kind != "machine" || fmt.Sprint(m.ExtraDisksMB) != "[512 2048]" || m.Limits.MemoryMB != 768 {
			t.Fatalf("machine template %+v", m)
		}
		do("PUT", fmt.Sprintf("/api/admin/sandbox-templates/%d?extra_disks_mb=", m.ID)).Expect(t, 200).JSON(t, &m)
		if len(m.ExtraDisksMB) != 0 {
			t.Fatalf("disks not cleared: %+v", m)
		}
		r := do("PUT", fmt.Sprintf("/api/admin/sandbox-templates/%d?kind=machine", tpl.ID)).Expect(t, 422)
		if got := strings.Join(locs(t, r), ","); got != "query.image" {
			t.Fatalf("container made a machine: locs %s", got)
		}
		do("DELETE", fmt.Sprintf("/api/admin/sandbox-templates/%d", m.ID)).Expect(t, 200)
		do("PUT", "/api/admin/sandbox-templates/99999?memory_mb=256").Expect(t, 404)
		e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=y&image=y", Token: u.Token}).Expect(t, 403)
		do("DELETE", fmt.Sprintf("/api/admin/sandbox-templates/%d", tpl.ID)).Expect(t, 200)
		do("DELETE", fmt.Sprintf("/api/admin/sandbox-templates/%d", tpl.ID)).Expect(t, 404)
	})
}

func TestTerminalsPerSandboxAreCapped(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e, u, c := learnerSandbox(t, "BusyBox", func(c *config.Config) { c.TerminalsPerSandbox = 2 })
	// The upgrade comes before the checks: a terminal holds its place once its shell answers.
	first := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	first.Exchange("echo one-$((1+1))\n", "one-2")
	second := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	second.Exchange("echo two-$((1+1))\n", "two-2")
	e.DialTerminal(t, "/ws/terminal/"+fmt.Sprintf("%d?token=%s", c.ID, u.Token), nil).ExpectClosed(http.StatusConflict,
		"Too many terminals open on this sandbox (at most 2): close one first")
	metrics := string(e.Get("/metrics", "").Expect(t, 200).Body)
	for _, want := range []string{"tuxlab_terminals_open 2", "tuxlab_sandboxes_running 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Closing one frees its place.
	first.Type("exit\n")
	first.AwaitControl("exit", apitest.TerminalWait)
	waitTerminalsOfSandboxClosed(t, e, 1)
	again := e.OpenTerminal(t, c.TerminalURL, u.Token, 80, 24)
	again.Exchange("echo again-$((1+1))\n", "again-2")
}

func TestTemplateInUseCannotBeDeleted(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	root := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	tpl := busyboxTemplate(t, e)
	createSandbox(t, e, u.Token, tpl)
	if r := e.Do(apitest.Request{Method: "DELETE", Path: fmt.Sprintf("/api/admin/sandbox-templates/%d", tpl), Token: root.Token}).Expect(t, 409); !strings.Contains(r.Detail(), "in use") {
		t.Fatal(r.Detail())
	}
}

func TestConcurrentStartsRespectTheRunningQuota(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		var ids []int64
		for range 2 {
			c := createSandbox(t, e, u.Token, tpl)
			stopSandbox(t, e, u.Token, c.ID)
			ids = append(ids, c.ID)
		}
		var reqs []apitest.Request
		for _, id := range ids {
			reqs = append(reqs, apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/start", id), Token: u.Token})
		}
		statuses := statusesOf(e.DoConcurrently(reqs))
		slices.Sort(statuses)
		if statuses[0] != 200 || statuses[1] != 409 {
			t.Fatalf("statuses %v: want one start and one 409", statuses)
		}
		list := listSandboxes(t, e, u.Token)
		running := 0
		for _, c := range list {
			if c.Status == "running" {
				running++
			}
		}
		if running != 1 {
			t.Fatalf("%d running after the race: %+v", running, list)
		}
	}, func(c *config.Config) { c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser = 2, 1 })
}

// TestConcurrentCreatesRespectTheHostCap: many learners creating at once
// cannot pass the host-wide cap together (before, 18 creates by 9 users
// passed a cap of 20 with 22 running).
func TestConcurrentCreatesRespectTheHostCap(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	const hostCap = 3
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		tpl := busyboxTemplate(t, e)
		var users []*apitest.User
		for i := range 6 {
			users = append(users, e.CreateUser(fmt.Sprintf("learner%d", i), auth.RoleStudent))
		}
		reqs := make([]apitest.Request, 2*len(users))
		for i := range reqs {
			reqs[i] = apitest.Request{Method: "POST", Path: "/api/containers/create", Token: users[i/2].Token, Body: map[string]any{"template_id": tpl}}
		}
		statuses := statusesOf(e.DoConcurrently(reqs))
		t.Cleanup(func() {
			cs, _, _ := e.App.Sandboxes.ListAll(context.Background(), 0, 0)
			for _, c := range cs {
				e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID)
			}
		})
		created := 0
		for _, s := range statuses {
			switch s {
			case 201:
				created++
			case 503:
			default:
				t.Fatalf("a concurrent create answered %d: %v", s, statuses)
			}
		}
		n, err := e.DB.Sandboxes().CountRunning(context.Background())
		if created != hostCap || err != nil || n != hostCap {
			t.Fatalf("%d created, %d running (%v) with a host cap of %d: %v", created, n, err, hostCap, statuses)
		}
	}, func(c *config.Config) {
		c.SandboxMaxRunning, c.SandboxMaxPerUser, c.SandboxMaxRunningPerUser = hostCap, 2, 2
	})
}

// TestSandboxNetworksArePerLearner: a learner's sandboxes on a network
// template reach each other; another learner's are out of reach, and so is
// the host, at the network's gateway and at every other address; the network
// goes with the learner's last sandbox.
func TestSandboxNetworksArePerLearner(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.SandboxMaxRunningPerUser = 3 })
	root := e.CreateUser("root", auth.RoleAdmin)
	alice := e.CreateUser("alice", auth.RoleStudent)
	bob := e.CreateUser("bob", auth.RoleStudent)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=net&image=" + apitest.TestImage + "&network=true",
		Token: root.Token}).Expect(t, 201).JSON(t, &tpl)
	a1, a2 := createSandbox(t, e, alice.Token, tpl.ID), createSandbox(t, e, alice.Token, tpl.ID)
	b1 := createSandbox(t, e, bob.Token, tpl.ID)
	ctx := context.Background()
	ip := func(u *apitest.User, id int64) string {
		res, err := e.App.Sandboxes.Exec(ctx, actor.User(u.ID), id, sandbox.Script{Text: "hostname -i"})
		if err != nil || !res.OK() {
			t.Fatalf("hostname -i: %v %+v", err, res)
		}
		return strings.TrimSpace(res.Stdout)
	}
	// BusyBox's ping needs a raw socket; a TCP connection to a listener shows reach.
	listen := func(u *apitest.User, id int64) string {
		if _, err := e.App.Sandboxes.Exec(ctx, actor.User(u.ID), id,
			sandbox.Script{Text: "nc -l -p 7000 </dev/null >/dev/null 2>&1 &"}); err != nil {
			t.Fatal(err)
		}
		return ip(u, id)
	}
	reaches := func(from int64, addr string) bool {
		res, err := e.App.Sandboxes.Exec(ctx, actor.User(alice.ID), from,
			sandbox.Script{Text: "echo hello | nc -w 2 " + addr + " 7000"})
		if err != nil {
			t.Fatal(err)
		}
		return res.OK()
	}
	if !reaches(a1.ID, listen(alice, a2.ID)) {
		t.Fatal("a learner's two sandboxes cannot reach each other")
	}
	if reaches(a1.ID, listen(bob, b1.ID)) {
		t.Fatal("a learner's sandbox reaches another learner's")
	}
	if got := hostAnswers(t, e, alice, a1.ID); len(got) > 0 {
		t.Fatalf("the host answers a sandbox at %v", got)
	}
	name := fmt.Sprintf("tuxlab-sandbox-%s-u%d", e.App.Sandboxes.Instance()[:8], alice.ID)
	for _, c := range []containerBody{a1, a2} {
		deleteSandbox(t, e, alice.Token, c.ID)
	}
	docker, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	if _, err := docker.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		t.Fatal("the learner's network outlived their last sandbox")
	}
}

// hostAnswers listens on every address of the host (0.0.0.0, the engine is
// local) and returns the addresses at which sandbox id of u reaches it: its
// network's gateway and each IPv4 address of the host, tried at once.
func hostAnswers(t *testing.T, e *apitest.Env, u *apitest.User, id int64) []string {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host-answers\n"))
			c.Close()
		}
	}()
	targets := []string{`$(ip route | awk '$1 == "default" {print $3; exit}')`}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			targets = append(targets, p.Addr().String())
		}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`for a in %s; do
	(nc -w 2 "$a" %d </dev/null 2>/dev/null | grep -q host-answers && echo "$a") &
done
wait`, strings.Join(targets, " "), port)
	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), id, sandbox.Script{Text: script})
	if err != nil || res.TimedOut {
		t.Fatalf("reaching the host: %v %+v", err, res)
	}
	if len(targets) < 2 {
		t.Fatal("the host has no IPv4 address to try")
	}
	return strings.Fields(res.Stdout)
}

// TestSandboxDiskIsBounded: the attack of issue 13 (a learner filling the
// host's disk) on whatever storage driver the engine has. With quotas the
// write itself fails; without them, the disk watch removes the sandbox and
// the host gets its space back, while a sandbox under its limit is left alone.
func TestSandboxDiskIsBounded(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) { c.SandboxMaxRunningPerUser = 3 })
	root := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Path: "/api/admin/sandbox-templates?name=small-disk&disk_mb=32&image=" + apitest.TestImage,
		Token: root.Token}).Expect(t, http.StatusCreated).JSON(t, &tpl)
	if tpl.Limits.DiskMB != 32 {
		t.Fatalf("disk_mb %d", tpl.Limits.DiskMB)
	}
	small, filler := createSandbox(t, e, u.Token, tpl.ID), createSandbox(t, e, u.Token, tpl.ID)
	ctx := context.Background()
	write := func(id int64, mb int) *sandbox.Result {
		res, err := e.App.Sandboxes.Exec(ctx, actor.User(u.ID), id,
			sandbox.Script{Text: fmt.Sprintf("dd if=/dev/zero of=/tmp/fill bs=1M count=%d 2>&1 && sync", mb)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := write(small.ID, 8); !res.OK() {
		t.Fatalf("8 MiB under a 32 MiB limit: %+v", res)
	}
	// A sparse file costs the blocks it holds, not its length, to the
	// engine's quota and to the watch alike.
	if res, err := e.App.Sandboxes.Exec(ctx, actor.User(u.ID), small.ID, sandbox.Script{Text: "truncate -s 8G /tmp/sparse 2>&1"}); err != nil || !res.OK() {
		t.Fatalf("an 8 GiB sparse file under a 32 MiB limit: %v %+v", err, res)
	}
	res := write(filler.ID, 96)
	docker, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	fillerEngine := engineID(t, e, filler.ID)
	if !res.OK() {
		// The engine has quotas: the write itself stopped at the limit.
		if !writeRefused(res) {
			t.Fatalf("write past a quota: %+v", res)
		}
		t.Log("the engine's quota stopped the write")
		return
	}
	t.Log("the engine has no quotas: the watch acts")
	if err := e.App.Sandboxes.WatchDisk(ctx); err != nil {
		t.Fatal(err)
	}
	var got containerBody
	e.Get(fmt.Sprintf("/api/containers/%d", filler.ID), u.Token).Expect(t, 200).JSON(t, &got)
	if got.Status != "error" || !strings.Contains(got.StatusDetail, "disk limit of 32 MiB") {
		t.Fatalf("a sandbox past its limit: %+v", got)
	}
	if _, err := docker.ContainerInspect(ctx, fillerEngine, client.ContainerInspectOptions{}); err == nil {
		t.Fatal("the engine container past its limit still holds its space")
	}
	e.Do(apitest.Request{Method: "POST", Path: fmt.Sprintf("/api/containers/%d/start", filler.ID), Token: u.Token}).Expect(t, http.StatusConflict)
	e.Get(fmt.Sprintf("/api/containers/%d", small.ID), u.Token).Expect(t, 200).JSON(t, &got)
	if got.Status != "running" {
		t.Fatalf("a sandbox under its limit: %+v", got)
	}
	// A reconciliation leaves the reason as it is.
	if err := e.App.Sandboxes.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	e.Get(fmt.Sprintf("/api/containers/%d", filler.ID), u.Token).Expect(t, 200).JSON(t, &got)
	if !strings.Contains(got.StatusDetail, "disk limit") {
		t.Fatalf("after reconciliation: %+v", got)
	}
	deleteSandbox(t, e, u.Token, filler.ID)
}

// writeRefused reports whether a write failed on a disk quota: ENOSPC from
// overlay2 on XFS, EDQUOT from btrfs.
func writeRefused(res *sandbox.Result) bool {
	out := res.Stdout + res.Stderr
	return strings.Contains(out, "No space") || strings.Contains(out, "quota exceeded")
}

// TestDiskWatchRunsInTheBackground: the server's own loop removes a sandbox
// past its limit, with no call from a test.
func TestDiskWatchRunsInTheBackground(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite", func(c *config.Config) {
		c.SandboxDiskMB, c.SandboxDiskCheckInterval = 16, 200*time.Millisecond
	})
	root := e.CreateUser("root", auth.RoleAdmin)
	u := e.CreateUser("learner", auth.RoleStudent)
	// Room in memory for the page cache of the write: BusyBox's 64 MiB could
	// see the engine's OOM killer end the sandbox before the watch does.
	tpl := busyboxTemplate(t, e)
	e.Do(apitest.Request{Method: "PUT", Path: fmt.Sprintf("/api/admin/sandbox-templates/%d?memory_mb=256", tpl), Token: root.Token}).Expect(t, 200)
	c := createSandbox(t, e, u.Token, tpl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.App.Background(ctx) }()
	defer func() { cancel(); <-done }()
	res, err := e.App.Sandboxes.Exec(ctx, actor.User(u.ID), c.ID,
		sandbox.Script{Text: "dd if=/dev/zero of=/tmp/fill bs=1M count=40 2>&1 && sync"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() && writeRefused(res) {
		t.Log("the engine's quota stopped the write")
		return // the default limit stopped the write itself
	}
	var got containerBody
	eventually(t, 30*time.Second, "the background watch to act", func() bool {
		e.Get(fmt.Sprintf("/api/containers/%d", c.ID), u.Token).Expect(t, 200).JSON(t, &got)
		return got.Status == "error"
	})
	if !strings.Contains(got.StatusDetail, "disk limit of 16 MiB") {
		t.Fatalf("the background watch did not act: %+v", got)
	}
}

// TestCreateSandboxValidationLocations checks where the sandbox domain's own
// validation problems land: it names the field, the handler places it in the body.
func TestCreateSandboxValidationLocations(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	apitest.Each(t, func(t *testing.T, e *apitest.Env) {
		u := e.CreateUser("learner", auth.RoleStudent)
		tpl := busyboxTemplate(t, e)
		tests := []struct {
			name string
			body map[string]any
			want string
		}{
			{"unknown template", map[string]any{"template_id": 1 << 40}, "body.template_id"},
			{"name over two lines", map[string]any{"template_id": tpl, "name": "one\ntwo"}, "body.name"},
			{"name too long", map[string]any{"template_id": tpl, "name": strings.Repeat("n", 65)}, "body.name"},
		}
		for _, tt := range tests {
			r := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token, Body: tt.body}).Expect(t, http.StatusUnprocessableEntity)
			if got := strings.Join(locs(t, r), ","); got != tt.want {
				t.Errorf("%s: locs %s, want %s", tt.name, got, tt.want)
			}
		}
	})
}
