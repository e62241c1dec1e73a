package qemu_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// bootMachine creates and starts a 512 MiB machine and waits until a command
// runs in it.
func bootMachine(b *testing.B, rt *qemu.Runtime) string {
	b.Helper()
	return startSpec(b, rt, sandbox.Spec{Name: "bench", Image: qemu.DefaultImage, MemoryBytes: 512 << 20, DiskMB: 2048})
}

// startSpec creates and starts a machine of spec s and waits until a command
// runs in it.
func startSpec(b *testing.B, rt *qemu.Runtime, s sandbox.Spec) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	id, err := rt.Create(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Start(ctx, id); err != nil {
		b.Fatal(err)
	}
	if code, err := rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"true"}}, nil, io.Discard, io.Discard); err != nil || code != 0 {
		b.Fatalf("first command: %d, %v", code, err)
	}
	return id
}

// rssMiB is the resident memory of machine id's QEMU process.
func rssMiB(state, id string) float64 {
	pid, _ := os.ReadFile(filepath.Join(state, id, "qemu.pid"))
	status, _ := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkBootToExec measures a cold boot: Create, Start and the first
// command's end (go test -bench BootToExec -benchtime 3x; each takes
// 20-70 s under TCG), the accelerator's canary excluded. It reports the
// QEMU process's RSS once booted, and logs systemd-analyze's view of the boot.
func BenchmarkBootToExec(b *testing.B) {
	rt, state := newRuntime(b)
	// The accelerator's canary (up to 15 s where KVM does not work) runs at
	// the first Start: run it before the timer, it is no part of a boot.
	b.Logf("accelerator: %s", rt.Accel(context.Background(), qemu.DefaultImage))
	var rss float64
	for b.Loop() {
		id := bootMachine(b, rt)
		b.StopTimer()
		rss += rssMiB(state, id)
		logBootAnalysis(b, rt, id)
		rt.Remove(context.Background(), id)
		b.StartTimer()
	}
	b.ReportMetric(rss/float64(b.N), "rss-MiB")
}

// logBootAnalysis logs where machine id's boot went: systemd-analyze's total,
// the slowest units and the critical chain to the host channel's unit.
func logBootAnalysis(b *testing.B, rt *qemu.Runtime, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"sh", "-c",
		"systemd-analyze time 2>&1 | head -1; systemd-analyze blame 2>&1 | head -8; " +
			"systemd-analyze critical-chain tuxlab-channel.service 2>&1 | tail -n +3 | head -12"}}, nil, &out, &out)
	b.Log("\n" + out.String())
}

// BenchmarkExecRoundTrip measures one non-TTY command (`true`) in a booted
// machine, over the host channel.
func BenchmarkExecRoundTrip(b *testing.B) {
	rt, _ := newRuntime(b)
	id := bootMachine(b, rt)
	ctx := context.Background()
	for b.Loop() {
		c, cancel := context.WithTimeout(ctx, time.Minute)
		code, err := rt.Run(c, id, sandbox.ExecSpec{Cmd: []string{"true"}}, nil, io.Discard, io.Discard)
		cancel()
		if err != nil || code != 0 {
			b.Fatalf("Run: %d, %v", code, err)
		}
	}
}
