package qemu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// TestWarmStart saves a booted machine of a template's layout (two blank
// disks and the tools disk) and restores two machines from it: each gets its
// own machine-id, SSH host keys, host name, the host's clock, its own disk
// bound and its own blank disks of its own sizes, none of them the
// template's, and the tools mounted.
func TestWarmStart(t *testing.T) {
	t.Parallel()
	rt, state := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*bootTimeout)
	defer cancel()
	tools, err := rt.ToolsVolume(ctx, sandbox.DefaultToolsImage)
	if err != nil {
		t.Fatalf("ToolsVolume: %v", err)
	}
	layout := sandbox.Spec{Image: qemu.DefaultImage, MemoryBytes: 512 << 20, ExtraDisksMB: []int{64, 64}, ToolsVolume: tools}
	if rt.WarmReady(layout) {
		t.Fatalf("WarmReady before PrepareWarm")
	}
	if err := rt.PrepareWarm(ctx, layout); err != nil {
		t.Fatalf("PrepareWarm: %v", err)
	}
	if !rt.WarmReady(layout) {
		t.Errorf("WarmReady after PrepareWarm = false")
	}
	other := layout
	other.ExtraDisksMB = []int{64}
	if rt.WarmReady(other) {
		t.Errorf("WarmReady for one blank disk, from a template with two = true")
	}
	metas, _ := filepath.Glob(filepath.Join(state, "warm", "*", "warm.json"))
	if len(metas) != 1 {
		t.Fatalf("warm templates: %v", metas)
	}
	var meta struct {
		MachineID string `json:"machine_id"`
	}
	if b, err := os.ReadFile(metas[0]); err != nil || json.Unmarshal(b, &meta) != nil || len(meta.MachineID) != 32 {
		t.Fatalf("warm.json: %s, %v", b, err)
	}

	seen := map[string]string{meta.MachineID: "the template"}
	bootIDs := map[string]bool{}
	for i, host := range []string{"warm1", "warm2"} {
		// The second blank disk's size differs from the template's.
		id, err := rt.Create(ctx, sandbox.Spec{Name: host, Image: qemu.DefaultImage, Hostname: host, User: "learner", MemoryBytes: 512 << 20, DiskMB: 2048,
			ExtraDisksMB: []int{64, 256}, ToolsVolume: tools})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		start := time.Now()
		if err := rt.Start(ctx, id); err != nil {
			t.Fatalf("Start (restore): %v", err)
		}
		got := strings.Fields(run(t, ctx, rt, id, "cat /etc/machine-id; hostname; date +%s; ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub | cut -d' ' -f2; lsblk -dnb -o SIZE /dev/vda; df -m --output=size / | tail -1; cat /proc/1/comm"))
		t.Logf("machine %d restored and renewed in %s", i+1, time.Since(start).Round(time.Millisecond))
		if len(got) != 7 {
			t.Fatalf("machine %d: %q", i+1, got)
		}
		machineID, hostname, clock, hostKey, disk, fsMB, init := got[0], got[1], got[2], got[3], got[4], got[5], got[6]
		for _, v := range []string{machineID, hostKey} {
			if who, ok := seen[v]; ok {
				t.Errorf("machine %d shares %s with %s", i+1, v, who)
			}
			seen[v] = host
		}
		if hostname != host || init != "systemd" {
			t.Errorf("machine %d: hostname %q, PID 1 %q", i+1, hostname, init)
		}
		if sec, _ := strconv.ParseInt(clock, 10, 64); time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
			t.Errorf("machine %d's clock says %s; the host's %s", i+1, time.Unix(sec, 0), time.Now())
		}
		if mb, _ := strconv.Atoi(fsMB); disk != strconv.Itoa(2048<<20) || mb < 1800 {
			t.Errorf("machine %d: vda %s bytes, / %s MiB; want the 2048 MiB bound, the file system grown to it", i+1, disk, fsMB)
		}
		if out := run(t, ctx, rt, id, "sudo -n -u learner id -un"); strings.TrimSpace(out) != "learner" {
			t.Errorf("machine %d: %q", i+1, out)
		}
		// Its own blank disks, of its sizes: the first machine's writes are
		// not in the second's. The tools are mounted, read-only.
		disks := strings.Join(strings.Fields(run(t, ctx, rt, id, "lsblk -dn -b -o NAME,SIZE /dev/vdb /dev/vdc; od -An -c -N 5 /dev/vdb")), " ")
		want := fmt.Sprintf("vdb %d vdc %d", 64<<20, 256<<20)
		if !strings.HasPrefix(disks, want) || !strings.HasSuffix(disks, `\0 \0 \0 \0 \0`) {
			t.Errorf("machine %d's blank disks: %q; want %q and zeros on vdb", i+1, disks, want)
		}
		run(t, ctx, rt, id, "printf clone > /dev/vdb; sync")
		if out := run(t, ctx, rt, id, "findmnt -rn -o OPTIONS "+sandbox.ToolsDir+" && "+sandbox.ToolsDir+"/bin/bash -c 'echo ok'"); !strings.HasPrefix(out, "ro,") || !strings.HasSuffix(out, "ok\n") {
			t.Errorf("machine %d's tools: %q", i+1, out)
		}
		// The journal is written under the new machine-id: journalctl reads
		// only the directory of the current one, so a journald left on the
		// template's would show the learner an empty journal.
		if out := run(t, ctx, rt, id, "journalctl -q -n 1 --no-pager; ls /var/log/journal/$(cat /etc/machine-id)/ 2>&1; true"); !strings.Contains(out, "system.journal") || strings.HasPrefix(out, "system.journal") {
			t.Errorf("machine %d's journal: %q; want its last entry, read from /var/log/journal/<its machine-id>/system.journal", i+1, out)
		}
		// Restored, not booted: the kernel's boot id is the template's in both.
		bootIDs[strings.TrimSpace(run(t, ctx, rt, id, "cat /proc/sys/kernel/random/boot_id"))] = true
	}
	if len(bootIDs) != 1 {
		t.Errorf("the clones' boot ids %v differ: they booted instead of restoring the template", bootIDs)
	}
}

// BenchmarkWarmStart measures Create, Start (a restore and the renewals) and
// the first command, from a warm template made before the timer starts:
// /none is the bare layout, /disks a template's (two blank disks, one of
// another size than the template's, and the tools disk).
func BenchmarkWarmStart(b *testing.B) {
	rt, state := newRuntime(b)
	ctx := context.Background()
	tools, err := rt.ToolsVolume(ctx, sandbox.DefaultToolsImage)
	if err != nil {
		b.Fatal(err)
	}
	bare := sandbox.Spec{Name: "bench", Image: qemu.DefaultImage, MemoryBytes: 512 << 20, DiskMB: 2048}
	disks := bare
	disks.ExtraDisksMB, disks.ToolsVolume = []int{64, 64}, tools
	for _, c := range []struct {
		name          string
		layout, clone sandbox.Spec
	}{
		{"none", bare, bare},
		{"disks", disks, func() sandbox.Spec { s := disks; s.ExtraDisksMB = []int{64, 256}; return s }()},
	} {
		b.Run(c.name, func(b *testing.B) {
			if err := rt.PrepareWarm(ctx, c.layout); err != nil {
				b.Fatal(err)
			}
			var rss float64
			for b.Loop() {
				id := startSpec(b, rt, c.clone)
				b.StopTimer()
				rss += rssMiB(state, id)
				rt.Remove(ctx, id)
				b.StartTimer()
			}
			b.ReportMetric(rss/float64(b.N), "rss-MiB")
		})
	}
}
