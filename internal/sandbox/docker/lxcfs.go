package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// LXCFSDir is where scripts/ensure-engine.sh mounts LXCFS on the host.
const LXCFSDir = "/var/lib/lxcfs"

// lxcfsFiles are the files LXCFS computes per container, from its control
// group: memory and swap from the memory limit, CPUs (cpuinfo, stat, the
// online CPUs) from its cpuset and CFS quota (lxcfs --enable-cfs), load from
// its own tasks (lxcfs -l). Each is bound read-only over the container's own
// file, so free, top's header, the load average and the CPU count describe
// the sandbox, not the host.
//
// Not /proc/uptime: LXCFS counts it from the container's start, while the
// kernel still gives every process's start time since the host booted, and
// ps computes elapsed time and %CPU from the two: measured with lxcfs 5.0.3,
// ps -o etime printed 441077233 days and %CPU 0.0 for a busy process, which
// the lessons on processes and troubleshooting use. uptime stays the host's.
var lxcfsFiles = []string{
	"proc/meminfo", "proc/cpuinfo", "proc/stat", "proc/loadavg",
	"proc/diskstats", "proc/swaps",
	"sys/devices/system/cpu/online",
}

// lxcfs is the LXCFS mount a runtime binds into its containers.
type lxcfs struct {
	dir   string   // "" when off
	files []string // the lxcfsFiles present under dir
	// stale is set while the mount does not answer (lxcfs died): containers
	// are then created without it, and a warning says so once.
	stale atomic.Bool
	warn  func(msg string, args ...any)
}

// UseLXCFS makes the runtime bind the LXCFS files under dir (LXCFSDir)
// into every container it creates, when dir is a live LXCFS mount. It
// returns an error saying why not otherwise (the runtime then binds
// nothing); warn reports later changes (the mount going stale or coming
// back). Only for an engine on this machine: the engine resolves the
// paths in its own file system.
func (r *Runtime) UseLXCFS(dir string, warn func(msg string, args ...any)) error {
	if err := lxcfsLive(dir); err != nil {
		return err
	}
	var files []string
	for _, f := range lxcfsFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			files = append(files, f)
		}
	}
	r.lxcfs = &lxcfs{dir: dir, files: files, warn: warn}
	return nil
}

// LXCFS returns the files the runtime binds from LXCFS (nil: none).
func (r *Runtime) LXCFS() []string {
	if r.lxcfs == nil {
		return nil
	}
	return r.lxcfs.files
}

// IsLocal reports whether the engine is reached through a Unix socket, so
// it runs on this machine and sees its files.
func (r *Runtime) IsLocal() bool {
	return strings.HasPrefix(r.c.DaemonHost(), "unix://")
}

// lxcfsLive checks that dir holds a mounted LXCFS that answers: a mount
// point left behind by a dead lxcfs fails to read ("transport endpoint is
// not connected"), and a hung one does not answer within a second.
func lxcfsLive(dir string) error {
	done := make(chan error, 1)
	go func() {
		b, err := os.ReadFile(filepath.Join(dir, "proc/meminfo"))
		if err == nil && !strings.HasPrefix(string(b), "MemTotal:") {
			err = fmt.Errorf("%s/proc/meminfo does not start with MemTotal", dir)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("no live LXCFS at %s: %w", dir, err)
		}
		return nil
	case <-time.After(time.Second):
		return fmt.Errorf("no live LXCFS at %s: reading it takes more than a second", dir)
	}
}

// mounts returns the bind mounts of a new container: none when LXCFS is off
// or does not answer now (a stale mount would make the container fail to
// start).
func (l *lxcfs) mounts() []mount.Mount {
	if l == nil || len(l.files) == 0 {
		return nil
	}
	if err := lxcfsLive(l.dir); err != nil {
		if !l.stale.Swap(true) {
			l.warn("LXCFS stopped answering: new sandboxes see the host's memory, CPUs and load until it is back (scripts/ensure-engine.sh starts it)", "error", err.Error())
		}
		return nil
	}
	if l.stale.Swap(false) {
		l.warn("LXCFS answers again: new sandboxes see their own memory, CPUs and load")
	}
	out := make([]mount.Mount, 0, len(l.files))
	for _, f := range l.files {
		out = append(out, mount.Mount{Type: mount.TypeBind, Source: filepath.Join(l.dir, f), Target: "/" + f, ReadOnly: true})
	}
	return out
}

// cpuset returns the CPUs a container limited to nanoCPUs gets: n whole
// CPUs of the engine's, taken in turn (round-robin), so that nproc, which
// counts the CPUs a process may run on rather than reading /proc, says n.
// A fractional limit, or one that covers every CPU, gets no cpuset ("").
func (r *Runtime) cpuset(ctx context.Context, nanoCPUs int64) string {
	if nanoCPUs <= 0 || nanoCPUs%1e9 != 0 {
		return ""
	}
	ncpu := r.engineCPUs(ctx)
	n := int(nanoCPUs / 1e9)
	if ncpu <= 1 || n >= ncpu {
		return ""
	}
	first := int(r.nextCPU.Add(uint64(n))-uint64(n)) % ncpu
	cpus := make([]string, n)
	for i := range cpus {
		cpus[i] = fmt.Sprint((first + i) % ncpu)
	}
	return strings.Join(cpus, ",")
}

// engineCPUs is the engine's CPU count, asked once (0 when it cannot say).
func (r *Runtime) engineCPUs(ctx context.Context) int {
	if n := r.ncpu.Load(); n != 0 {
		return int(n)
	}
	res, err := r.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return 0
	}
	r.ncpu.Store(int64(res.Info.NCPU))
	return res.Info.NCPU
}
