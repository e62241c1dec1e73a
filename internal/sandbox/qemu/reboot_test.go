package qemu_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
	"tuxlab/internal/sandbox/qemu"
)

// TestRebootPoweroff reboots a machine from inside (the learner's sudo
// reboot): it comes back by itself, commands run again, it is still running
// and what was synced before is still there; then powers it off from
// inside: it is not running, with a FinishedAt, and Start boots it again.
func TestRebootPoweroff(t *testing.T) {
	t.Parallel()
	rt, _ := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*bootTimeout)
	defer cancel()
	id, err := rt.Create(ctx, sandbox.Spec{Name: "reboot", Image: qemu.DefaultImage, Hostname: "reboot", User: "learner", MemoryBytes: 384 << 20})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	first := strings.TrimSpace(run(t, ctx, rt, id, "echo kept > /root/persist; sync; cat /proc/sys/kernel/random/boot_id"))

	inside(ctx, rt, id, "sudo -n reboot")
	second := waitBoot(t, ctx, rt, id, first)
	if st, err := rt.Inspect(ctx, id); err != nil || !st.Running || st.Status != "running" {
		t.Errorf("Inspect after a reboot = %+v, %v; want running", st, err)
	}
	if got := run(t, ctx, rt, id, "cat /root/persist; cat /proc/1/comm"); got != "kept\nsystemd\n" {
		t.Errorf("after a reboot: %q; want the synced file and systemd", got)
	}

	before, _ := rt.Inspect(ctx, id)
	inside(ctx, rt, id, "sudo -n poweroff")
	deadline := time.Now().Add(bootTimeout)
	var st sandbox.State
	for {
		if st, err = rt.Inspect(ctx, id); err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if !st.Running || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if st.Running || st.Status != "exited" || st.FinishedAt.IsZero() || st.FinishedAt.Before(before.StartedAt) {
		t.Fatalf("Inspect after a poweroff = %+v; want exited with a FinishedAt after %s", st, before.StartedAt)
	}
	if _, err := rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"true"}}, nil, io.Discard, io.Discard); err == nil {
		t.Errorf("Run in a machine powered off succeeded")
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatalf("Start after a poweroff: %v", err)
	}
	waitBoot(t, ctx, rt, id, second)
	if got := run(t, ctx, rt, id, "cat /root/persist"); got != "kept\n" {
		t.Errorf("after a poweroff and Start: %q", got)
	}
}

// inside runs script as the template's user; its session may end without an
// exit status (the machine goes down under it), so only a minute is given.
func inside(ctx context.Context, rt *qemu.Runtime, id, script string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rt.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}}, nil, io.Discard, io.Discard)
}

// waitBoot waits until machine id answers with a boot id other than old,
// and returns it.
func waitBoot(t *testing.T, ctx context.Context, rt *qemu.Runtime, id, old string) string {
	t.Helper()
	deadline := time.Now().Add(bootTimeout)
	for {
		var out strings.Builder
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		code, err := rt.Run(rctx, id, sandbox.ExecSpec{Cmd: []string{"cat", "/proc/sys/kernel/random/boot_id"}}, nil, &out, io.Discard)
		cancel()
		if got := strings.TrimSpace(out.String()); err == nil && code == 0 && got != "" && got != old {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("machine %s did not come back: %d, %v, %q", id, code, err, out.String())
		}
		time.Sleep(time.Second)
	}
}
