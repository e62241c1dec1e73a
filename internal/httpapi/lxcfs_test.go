package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"

	"tuxlab/internal/actor"
	"tuxlab/internal/apitest"
	"tuxlab/internal/auth"
	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/docker"
)

// requireLXCFS stops the test unless LXCFS runs on this host: it fails
// where the engine tests are required (CI, TUXLAB_TEST_DOCKER), whose
// script installs and starts it (scripts/ensure-engine.sh), so CI cannot
// skip the test silently.
func requireLXCFS(t *testing.T) {
	t.Helper()
	if _, err := os.ReadFile(docker.LXCFSDir + "/proc/meminfo"); err != nil {
		stop := t.Skipf
		if apitest.EngineRequired() {
			stop = t.Fatalf
		}
		stop("LXCFS does not run at %s (scripts/ensure-engine.sh installs and starts it): %v", docker.LXCFSDir, err)
	}
}

// TestSandboxSeesItsOwnLimits: with LXCFS running, a sandbox's free,
// /proc/meminfo, load average, /proc/cpuinfo and nproc describe the sandbox
// (its template's memory and CPUs, its own tasks), not the host, while ps
// still tells how long a process has run (so /proc/uptime stays the
// host's: docs/sandboxes.md). On the Debian image: procps's free reads
// /proc/meminfo, BusyBox's asks the kernel (sysinfo), which LXCFS cannot
// change.
func TestSandboxSeesItsOwnLimits(t *testing.T) {
	t.Parallel()
	apitest.RequireImage(t, apitest.DebianImage)
	requireLXCFS(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	root := e.CreateUser("root", auth.RoleAdmin)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Token: root.Token,
		Path: "/api/admin/sandbox-templates?name=limits&image=" + apitest.DebianImage + "&memory_mb=96&cpu_millis=1000&pids_limit=64"}).
		Expect(t, 201).JSON(t, &tpl)
	c := createSandbox(t, e, u.Token, tpl.ID)

	res, err := e.App.Sandboxes.Exec(context.Background(), actor.User(u.ID), c.ID, sandbox.Script{
		Text: "grep MemTotal /proc/meminfo; free | awk '$1 == \"Mem:\" {print $2}'; cut -d' ' -f4 /proc/loadavg; " +
			"nproc; grep -c ^processor /proc/cpuinfo; ps -o etimes= -p $$"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	t.Logf("sandbox: %q", res.Stdout)
	lines := strings.Fields(res.Stdout)
	if len(lines) != 8 {
		t.Fatalf("output %q", res.Stdout)
	}
	if lines[0] != "MemTotal:" || lines[1] != strconv.Itoa(96<<10) || lines[2] != "kB" {
		t.Errorf("/proc/meminfo says %s %s %s, want MemTotal: %d kB (the template's 96 MiB)", lines[0], lines[1], lines[2], 96<<10)
	}
	if lines[3] != strconv.Itoa(96<<10) {
		t.Errorf("free says %s KiB in total, want %d", lines[3], 96<<10)
	}
	// The load average counts the sandbox's own tasks (running/total): a
	// handful, where the host has hundreds.
	_, total, _ := strings.Cut(lines[4], "/")
	if n, err := strconv.Atoi(total); err != nil || n > 20 {
		t.Errorf("/proc/loadavg counts %q tasks: the host's", lines[4])
	}
	// One whole CPU: /proc/cpuinfo lists one, and nproc (the CPUs the shell
	// may run on) says one where the host has more.
	if lines[6] != "1" {
		t.Errorf("/proc/cpuinfo lists %s processors, want 1", lines[6])
	}
	if runtime.NumCPU() > 1 && lines[5] != "1" {
		t.Errorf("nproc says %s on a host of %d CPUs, want 1", lines[5], runtime.NumCPU())
	}
	// ps still tells how long the shell has run: seconds, not ages.
	if s, err := strconv.Atoi(lines[7]); err != nil || s < 0 || s > 3600 {
		t.Errorf("ps says the shell has run %q seconds", lines[7])
	}
}

// onlyToolsAndLXCFS reports whether a sandbox's mounts are the trusted tools'
// volume, read-only, and nothing else but LXCFS's files, read-only, each
// over the file of the same name.
func onlyToolsAndLXCFS(mounts []container.MountPoint) bool {
	tools := 0
	for _, m := range mounts {
		switch {
		case m.RW:
			return false
		case m.Type == "volume" && m.Destination == sandbox.ToolsDir && strings.HasPrefix(m.Name, "tuxlab-tools-"):
			tools++
		case m.Type == "bind" && m.Source == docker.LXCFSDir+m.Destination:
		default:
			return false
		}
	}
	return tools == 1
}

// TestTemplateWithAMissingRuntime: a template may name gVisor's runsc, which
// the engine may not have. Creating a sandbox from it is then the engine's
// lack, said as such (503 with what to do), never a 500.
func TestTemplateWithAMissingRuntime(t *testing.T) {
	t.Parallel()
	apitest.RequireEngine(t)
	e := apitest.New(t, "sqlite")
	u := e.CreateUser("learner", auth.RoleStudent)
	root := e.CreateUser("root", auth.RoleAdmin)
	var tpl templateBody
	e.Do(apitest.Request{Method: "POST", Token: root.Token,
		Path: "/api/admin/sandbox-templates?name=gvisor&image=tuxlab/sandbox-busybox:latest&runtime=runsc"}).
		Expect(t, 201).JSON(t, &tpl)
	res := e.Do(apitest.Request{Method: "POST", Path: "/api/containers/create", Token: u.Token,
		Body: map[string]any{"template_id": tpl.ID}})
	if res.Status == http.StatusCreated {
		var c containerBody
		res.JSON(t, &c)
		e.App.Sandboxes.Delete(context.Background(), actor.AsAdmin(), c.ID)
		t.Skip("this engine has runsc")
	}
	res.Expect(t, http.StatusServiceUnavailable)
	if !strings.Contains(string(res.Body), "runtime") {
		t.Fatalf("503 says %s", res.Body)
	}
}
