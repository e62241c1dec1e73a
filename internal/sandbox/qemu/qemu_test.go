package qemu_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// Machines boot in 30-120 s under TCG on a busy 2-core host: tests wait for
// readiness with generous deadlines and never assert timing.
const bootTimeout = 6 * time.Minute

// newRuntime returns a driver with its own state directory, removed (with
// every machine in it) when the test ends. Without QEMU or the machine image
// the test skips, unless CI is set or TUXLAB_TEST_MACHINE=1 (scripts/test.sh
// and .ci/run set it after scripts/build-machine-image.sh) makes that a
// failure.
func newRuntime(t testing.TB) (*qemu.Runtime, string) {
	t.Helper()
	removeStale(t)
	required := os.Getenv("CI") != "" || os.Getenv("TUXLAB_TEST_MACHINE") == "1"
	miss := func(why string) {
		if required {
			t.Fatalf("TUXLAB_TEST_MACHINE=1 but %s", why)
		}
		t.Skipf("%s (set TUXLAB_TEST_MACHINE=1 to require it)", why)
	}
	for _, p := range []string{"qemu-system-x86_64", "qemu-img"} {
		if _, err := exec.LookPath(p); err != nil {
			miss(p + " is not installed (apt-get install qemu-system-x86 qemu-utils)")
		}
	}
	imageDir := os.Getenv("TUXLAB_MACHINE_DIR")
	if imageDir == "" {
		imageDir = qemu.DefaultImageDir
	}
	if _, err := os.Stat(filepath.Join(imageDir, qemu.DefaultImage, "base.img")); err != nil {
		miss("no machine image: run ./scripts/build-machine-image.sh")
	}
	// A short path: unix socket paths are limited to 108 bytes.
	state, err := os.MkdirTemp("", "tlm-")
	if err != nil {
		t.Fatal(err)
	}
	// Whose it is: a later run removes it if this process dies first.
	if err := os.WriteFile(filepath.Join(state, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := qemu.New(qemu.Options{ImageDir: imageDir, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		list, _ := rt.List(ctx, nil)
		for _, in := range list {
			rt.Remove(ctx, in.EngineID)
		}
		os.RemoveAll(state)
	})
	return rt, state
}

// removeStale kills the machines of test runs that died without cleaning up
// (a timeout, a kill): QEMU is daemonized and would run on. A state
// directory whose owner process is gone is removed with its machines.
func removeStale(t testing.TB) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "tlm-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && syscall.Kill(pid, 0) == nil {
			continue // its test is still running
		}
		pidfiles, _ := filepath.Glob(filepath.Join(dir, "*", "qemu.pid"))
		for _, f := range pidfiles {
			b, _ := os.ReadFile(f)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if pid > 0 && bytes.Contains(cmdline, []byte(filepath.Dir(f))) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.Logf("removed the machines of a dead test run: %s", dir)
		os.RemoveAll(dir)
	}
}

// run runs script in machine id as root and returns its stdout, failing the
// test on an error or a non-zero code.
func run(t *testing.T, ctx context.Context, rt *qemu.Runtime, id, script string) string {
	t.Helper()
	out, errOut, code := runCode(t, ctx, rt, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"})
	if code != 0 {
		t.Fatalf("%s: code %d, stdout %q, stderr %q", script, code, out, errOut)
	}
	return out
}

func runCode(t *testing.T, ctx context.Context, rt *qemu.Runtime, id string, s sandbox.ExecSpec) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := rt.Run(ctx, id, s, nil, &out, &errOut)
	if err != nil {
		t.Fatalf("Run %q: %v", s.Cmd, err)
	}
	return out.String(), errOut.String(), code
}

// TestMachine boots one machine with two blank disks, the tools disk and
// the user-mode network, and checks through the driver what a learner's
// machine must be.
func TestMachine(t *testing.T) {
	t.Parallel()
	rt, state := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*bootTimeout)
	defer cancel()
	tools, err := rt.ToolsVolume(ctx, sandbox.DefaultToolsImage)
	if err != nil {
		t.Fatalf("ToolsVolume: %v", err)
	}
	id, err := rt.Create(ctx, sandbox.Spec{
		Name: "test-machine", Image: qemu.DefaultImage, Hostname: "lab1", User: "learner",
		MemoryBytes: 512 << 20, NanoCPUs: 1_000_000_000, DiskMB: 1024, ExtraDisksMB: []int{64, 128},
		Network: qemu.NetworkUser, Labels: map[string]string{sandbox.LabelManaged: "qemu-test"}, ToolsVolume: tools,
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	bootCtx, bootCancel := context.WithTimeout(ctx, bootTimeout)
	defer bootCancel()
	if got := strings.TrimSpace(run(t, bootCtx, rt, id, "cat /proc/1/comm")); got != "systemd" {
		t.Fatalf("PID 1 is %q; want systemd", got)
	}

	// For the logs: where the boot's time went (it varies with the host's load).
	t.Log(run(t, bootCtx, rt, id, "systemd-analyze time 2>&1 | head -1; systemd-analyze blame 2>&1 | head -8"))

	t.Run("Kernel", func(t *testing.T) {
		want, err := rt.KernelRelease(qemu.DefaultImage)
		if err != nil || want == "" {
			t.Fatalf("KernelRelease: %q, %v", want, err)
		}
		host, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		if got := strings.TrimSpace(run(t, ctx, rt, id, "uname -r")); got != want || got == strings.TrimSpace(string(host)) {
			t.Errorf("uname -r = %q; want the image's kernel %q, not the host's %q", got, want, host)
		}
		if got := strings.TrimSpace(run(t, ctx, rt, id, "hostname")); got != "lab1" {
			t.Errorf("hostname = %q; want lab1", got)
		}
	})
	t.Run("BootServices", func(t *testing.T) {
		// AppArmor's profiles load from the image's cache, still enforced
		// (lessons teach AppArmor).
		if out, _, code := runCode(t, ctx, rt, id, sandbox.ExecSpec{Cmd: []string{"aa-status", "--enforced"}, User: "root"}); code != 0 || strings.TrimSpace(out) == "0" {
			t.Errorf("aa-status --enforced = %q (exit %d); want profiles in enforce mode", out, code)
		}
		// networkd starts because the machine has a NIC (udev), and DHCP
		// gives it QEMU's address.
		dhcp := "for i in $(seq 300); do ip -4 -o addr show dev eth0 | grep -q 'inet 10.0.2.15/' && exit 0; sleep 1; done; ip addr; systemctl status systemd-networkd; exit 1"
		if out, _, code := runCode(t, ctx, rt, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", dhcp}, User: "root"}); code != 0 {
			t.Errorf("eth0 never got 10.0.2.15 by DHCP:\n%s", out)
		}
	})
	t.Run("Disks", func(t *testing.T) {
		// The blank disks keep their names with the tools disk after them.
		got := run(t, ctx, rt, id, "lsblk -dn -b -o NAME,SIZE,SERIAL")
		for _, want := range []string{fmt.Sprintf("vda %d", 1024<<20), fmt.Sprintf("vdb %d tuxlab-disk1", 64<<20),
			fmt.Sprintf("vdc %d tuxlab-disk2", 128<<20), "tuxlab-tools"} {
			if !strings.Contains(strings.Join(strings.Fields(got), " "), want) {
				t.Errorf("lsblk = %q; want %q", got, want)
			}
		}
	})
	t.Run("Tools", func(t *testing.T) {
		// A check's command line (sandbox.scriptSpec): the trusted env,
		// timeout and bash, the script on stdin, as root.
		var out, errOut bytes.Buffer
		code, err := rt.Run(ctx, id, sandbox.ExecSpec{User: "root", Cmd: []string{sandbox.ToolsDir + "/bin/env", "-i",
			"PATH=/usr/sbin:/usr/bin:/sbin:/bin", sandbox.ToolsDir + "/bin/timeout", "-s", "KILL", "5", sandbox.ToolsDir + "/bin/bash", "-s"}},
			strings.NewReader("echo \"bash $BASH_VERSION\"; id -u; findmnt -rn -o FSTYPE,OPTIONS "+sandbox.ToolsDir+"\n"), &out, &errOut)
		if err != nil || code != 0 || !strings.Contains(out.String(), "bash ") || !strings.Contains(out.String(), "\n0\next4 ro,") {
			t.Fatalf("a script through the trusted tools = %d, %v, %q, %q; want bash as root, the tools mounted read-only", code, err, out.String(), errOut.String())
		}
		// Root can neither write the tools nor their device, nor remount it.
		img := filepath.Join(os.Getenv("TUXLAB_MACHINE_DIR"), qemu.DefaultImage, "tools.img")
		if os.Getenv("TUXLAB_MACHINE_DIR") == "" {
			img = filepath.Join(qemu.DefaultImageDir, qemu.DefaultImage, "tools.img")
		}
		before := sha256File(t, img)
		attempts := map[string]string{
			"write a file":   "touch " + sandbox.ToolsDir + "/bin/x",
			"replace bash":   "cp /bin/true " + sandbox.ToolsDir + "/bin/bash",
			"remount rw":     "mount -o remount,rw " + sandbox.ToolsDir,
			"write the disk": "dev=$(findmnt -n -o SOURCE " + sandbox.ToolsDir + "); blockdev --setrw $dev; dd if=/dev/zero of=$dev bs=4096 count=16 oflag=direct conv=fsync",
			"a new rw mount": "dev=$(findmnt -n -o SOURCE " + sandbox.ToolsDir + "); mkdir -p /mnt/t && mount -o rw $dev /mnt/t && touch /mnt/t/x",
		}
		for what, script := range attempts {
			if out, errOut, code := runCode(t, ctx, rt, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"}); code == 0 {
				t.Errorf("root could %s in the tools: %q, %q", what, out, errOut)
			}
		}
		run(t, ctx, rt, id, "sync")
		if after := sha256File(t, img); after != before {
			t.Errorf("tools.img changed on the host: %s, was %s", after, before)
		}
		if got := run(t, ctx, rt, id, sandbox.ToolsDir+"/bin/busybox sha256sum "+sandbox.ToolsDir+"/bin/bash | cut -c1-64"); strings.TrimSpace(got) == "" {
			t.Errorf("the trusted bash is unreadable: %q", got)
		}
	})
	t.Run("Run", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code, err := rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", "cat; id -un; echo oops >&2; exit 7"}},
			strings.NewReader("in\n"), &out, &errOut)
		if err != nil || code != 7 || out.String() != "in\nlearner\n" || errOut.String() != "oops\n" {
			t.Errorf("Run = %d, %v, %q, %q; want 7, stdin then the template's user on stdout, oops on stderr", code, err, out.String(), errOut.String())
		}
		if out := run(t, ctx, rt, id, "sudo -n -u learner sudo -n id -u"); strings.TrimSpace(out) != "0" {
			t.Errorf("learner's sudo = %q", out)
		}
	})
	t.Run("TTY", func(t *testing.T) {
		s, err := rt.Exec(ctx, id, sandbox.ExecSpec{TTY: true, Cols: 80, Rows: 24, Env: []string{"TERM=dumb"}})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		defer s.Close()
		if err := s.Resize(ctx, 120, 40); err != nil {
			t.Fatalf("Resize: %v", err)
		}
		if _, err := s.Write([]byte("stty size; tty; id -un; exit 3\n")); err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(s)
		if !strings.Contains(string(out), "40 120") || !strings.Contains(string(out), "/dev/pts/") || !strings.Contains(string(out), "learner") {
			t.Errorf("the learner's terminal after Resize(120, 40) reads %q", out)
		}
		if code, err := s.Wait(ctx); code != 3 || err != nil {
			t.Errorf("Wait = %d, %v; want 3", code, err)
		}
	})
	t.Run("HostUnreachable", func(t *testing.T) {
		// A service on the host's loopback, where QEMU's user network
		// without restrict=on would take the guest (10.0.2.2).
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan struct{}, 1)
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := l.Addr().(*net.TCPAddr).Port
		// The guest has its NIC and an address (so what follows tests the
		// network, not its absence).
		waitFor(t, ctx, rt, id, "ip -4 -o addr show dev eth0 | grep -q 'inet 10.0.2.15/'")
		script := fmt.Sprintf("timeout 10 bash -c 'echo > /dev/tcp/10.0.2.2/%d' && echo reached || echo blocked", port)
		if got := strings.TrimSpace(run(t, ctx, rt, id, script)); got != "blocked" {
			t.Errorf("the host's loopback service at 10.0.2.2:%d from the machine: %q", port, got)
		}
		select {
		case <-accepted:
			t.Errorf("the host's loopback service accepted a connection from the machine")
		default:
		}
	})
	t.Run("DiskBound", func(t *testing.T) {
		// Writing past the disk bound fails inside the machine; the overlay
		// stays below the bound on the host.
		out := run(t, ctx, rt, id, "dd if=/dev/zero of=/fill bs=1M count=2000 2>&1 || true; sync; df -m / | tail -1")
		if !strings.Contains(out, "No space left on device") || !strings.Contains(out, "100%") {
			t.Errorf("a fill of 2000 MiB on a 1024 MiB disk: %q", out)
		}
		usage, err := rt.DiskUsage(ctx, []string{id})
		if err != nil || usage[id] > 1100<<20 || usage[id] < 256<<20 {
			t.Errorf("DiskUsage after a fill = %d MiB, %v; want between 256 MiB and the bound", usage[id]>>20, err)
		}
		run(t, ctx, rt, id, "rm /fill; fstrim /")
	})

	if err := rt.Remove(ctx, id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := rt.Inspect(ctx, id); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Inspect after Remove = %v; want ErrGone", err)
	}
	if out, _ := exec.Command("pgrep", "-f", "tuxlab-"+id).Output(); len(out) > 0 {
		t.Errorf("QEMU processes of a removed machine: %s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(state, id+"*")); len(left) > 0 {
		t.Errorf("files of a removed machine: %v", left)
	}
}

// sha256File is the hex sha256 of file.
func sha256File(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// waitFor runs script until it succeeds, up to a minute.
func waitFor(t *testing.T, ctx context.Context, rt *qemu.Runtime, id, script string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, _, code := runCode(t, ctx, rt, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"})
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after a minute", script)
		}
		time.Sleep(time.Second)
	}
}
