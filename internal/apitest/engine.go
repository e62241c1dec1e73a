package apitest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/docker"
	"tuxlab/internal/sandbox/qemu"
)

// TestImage is the sandbox image the engine tests run (scripts/build-images.sh busybox).
const TestImage = "tuxlab/sandbox-busybox:latest"

// EngineRequired reports whether a missing container engine must fail the
// tests rather than skip them: in CI, or when TUXLAB_TEST_DOCKER is set.
func EngineRequired() bool { return os.Getenv("CI") != "" || os.Getenv("TUXLAB_TEST_DOCKER") != "" }

// RequireEngine returns a runtime on the local engine with the test image, or
// stops the test: it fails when EngineRequired, and skips otherwise.
func RequireEngine(t testing.TB) *docker.Runtime {
	t.Helper()
	stop := t.Skipf
	if EngineRequired() {
		stop = t.Fatalf
	}
	rt, err := docker.New(os.Getenv("DOCKER_HOST"))
	if err != nil {
		stop("container engine: %v", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.Ping(ctx); err != nil {
		stop("no container engine answers (install docker.io and start dockerd; CI=true or TUXLAB_TEST_DOCKER=1 makes this fatal): %v", err)
		return nil
	}
	if ok, err := rt.ImageExists(ctx, TestImage); err != nil || !ok {
		stop("image %s is missing: run scripts/build-images.sh busybox (%v)", TestImage, err)
		return nil
	}
	if ok, err := rt.ImageExists(ctx, sandbox.DefaultToolsImage); err != nil || !ok {
		stop("image %s, which every sandbox mounts, is missing: run scripts/build-images.sh tools (%v)", sandbox.DefaultToolsImage, err)
		return nil
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// removeEngineContainers removes every engine container labelled with this
// test server's instance id, so a failed test leaks nothing into the engine.
func removeEngineContainers(instance string) {
	rt, err := docker.New(os.Getenv("DOCKER_HOST"))
	if err != nil {
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := rt.List(ctx, map[string]string{sandbox.LabelManaged: "true", sandbox.LabelInstance: instance})
	if err != nil {
		return // no engine: nothing to clean
	}
	for _, in := range list {
		rt.Remove(ctx, in.EngineID)
	}
	// The sandbox networks' start-up check makes a throwaway container and
	// network; a test that ends during the check may leave them.
	probes, _ := rt.List(ctx, map[string]string{sandbox.LabelManaged: "probe", sandbox.LabelInstance: instance})
	for _, in := range probes {
		rt.Remove(ctx, in.EngineID)
	}
	rt.RemoveNetwork(ctx, "tuxlab-sandbox-"+instance[:8]+"-probe")
}

// DebianImage is the learners' image the bundled laboratories and exams target
// (scripts/build-images.sh debian).
const DebianImage = "tuxlab/sandbox-debian:latest"

// RequireImage is RequireEngine for tests that need another image as well.
func RequireImage(t testing.TB, image string) *docker.Runtime {
	t.Helper()
	rt := RequireEngine(t)
	if rt == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := rt.ImageExists(ctx, image); err != nil || !ok {
		stop := t.Skipf
		if EngineRequired() {
			stop = t.Fatalf
		}
		stop("image %s is missing: run scripts/build-images.sh (%v)", image, err)
		return nil
	}
	return rt
}

// machineStateDir is a fresh directory for a test server's machines,
// removed when t ends (after its server, whose cleanup removes the machines).
func machineStateDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "tlm-api-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// removeMachines removes every machine in dir labelled with this test
// server's instance id: no QEMU process outlives its test.
func removeMachines(dir, instance string) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return
	}
	rt, err := qemu.New(qemu.Options{StateDir: dir})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, _ := rt.List(ctx, map[string]string{sandbox.LabelManaged: "true", sandbox.LabelInstance: instance})
	for _, in := range list {
		rt.Remove(ctx, in.EngineID)
	}
}

// MachinesRequired reports whether tests of machines must run rather than
// skip: in CI, or when TUXLAB_TEST_MACHINE=1 (scripts/test.sh sets it once
// QEMU and the machine image are there).
func MachinesRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv("TUXLAB_TEST_MACHINE") == "1"
}

// RequireMachines skips t unless QEMU and the machine image are on this
// host; where MachinesRequired, their absence fails it instead.
func RequireMachines(t testing.TB) {
	t.Helper()
	miss := func(why string) {
		if MachinesRequired() {
			t.Fatalf("TUXLAB_TEST_MACHINE=1 but %s", why)
		}
		t.Skipf("%s (set TUXLAB_TEST_MACHINE=1 to require it)", why)
	}
	for _, p := range []string{"qemu-system-x86_64", "qemu-img"} {
		if _, err := exec.LookPath(p); err != nil {
			miss(p + " is not installed (apt-get install qemu-system-x86 qemu-utils)")
		}
	}
	dir := os.Getenv("TUXLAB_MACHINE_DIR")
	if dir == "" {
		dir = qemu.DefaultImageDir
	}
	if _, err := os.Stat(filepath.Join(dir, qemu.DefaultImage, "base.img")); err != nil {
		miss("no machine image: run ./scripts/build-machine-image.sh")
	}
}
