package qemu

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// canaryTimeout bounds the KVM canary. On real KVM the kernel reaches its
// "cannot mount root" panic in well under a second; under TCG in about 3 s.
const canaryTimeout = 15 * time.Second

// accels caches the canary's verdict per QEMU and kernel for the process:
// the hardware does not change while tuxlab runs.
var accels sync.Map // string → *accelResult

type accelResult struct {
	once  sync.Once
	accel string
}

// accel returns the accelerator machines start with: Options.Accel when set,
// else "kvm" when /dev/kvm opens and the canary boots under it, else "tcg".
// The choice is logged once.
func (r *Runtime) accel(ctx context.Context, kernel string) string {
	if r.opts.Accel != "" {
		return r.opts.Accel
	}
	v, _ := accels.LoadOrStore(r.opts.QEMU+"\x00"+kernel, &accelResult{})
	res := v.(*accelResult)
	res.once.Do(func() {
		res.accel = "tcg"
		f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
		if err != nil {
			r.log.Warn("machines run under TCG, QEMU's software emulation (slow): /dev/kvm cannot be opened", "err", err)
			return
		}
		f.Close()
		start := time.Now()
		if r.canary(ctx, kernel) {
			res.accel = "kvm"
			r.log.Info("machines run under KVM", "canary", time.Since(start).Round(time.Millisecond))
			return
		}
		r.log.Warn("machines run under TCG, QEMU's software emulation (slow): /dev/kvm opens but a kernel does not boot under it (a nested or paravirtual hypervisor?)",
			"canary_timeout", canaryTimeout)
	})
	return res.accel
}

// Accel returns the accelerator this driver's machines use ("kvm" or "tcg"),
// running the canary if no machine has started yet (kernel: the image's).
func (r *Runtime) Accel(ctx context.Context, image string) string {
	dir := r.imageDir(image)
	if dir == "" {
		return ""
	}
	return r.accel(ctx, dir+"/vmlinuz")
}

// canary boots kernel under KVM with no root file system: a kernel that
// really runs reaches its "VFS: Unable to mount root" panic quickly, and
// QEMU exits with it (panic=-1, -no-reboot).
func (r *Runtime) canary(ctx context.Context, kernel string) bool {
	ctx, cancel := context.WithTimeout(ctx, canaryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.opts.QEMU, "-accel", "kvm", "-cpu", "host", "-M", "q35", "-m", "128",
		"-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio", "-no-reboot",
		"-kernel", kernel, "-append", "console=ttyS0 panic=-1 root=/dev/nonexistent")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return false
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "VFS: Unable to mount root") {
			return true
		}
	}
	return false
}
