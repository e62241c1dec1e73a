package qemu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tuxlab/internal/sandbox"
)

// record is what the driver keeps about one machine, in machine.json in its
// directory: enough to start it again after tuxlab restarts, and its labels
// for List.
type record struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Labels       map[string]string `json:"labels"`
	ImageDir     string            `json:"image_dir"` // the image's directory, symlinks resolved
	Hostname     string            `json:"hostname"`
	User         string            `json:"user"`
	MemoryMB     int               `json:"memory_mb"`
	CPUs         int               `json:"cpus"`
	DiskMB       int               `json:"disk_mb"`
	ExtraDisksMB []int             `json:"extra_disks_mb,omitempty"`
	Network      string            `json:"network"`         // none, user or a segment's name
	Addr         string            `json:"addr,omitempty"`  // its address on a segment
	Tools        bool              `json:"tools,omitempty"` // the image's tools disk is attached (read-only)
	Warm         string            `json:"warm,omitempty"`  // the warm template it restores from (warm.go)
	Created      time.Time         `json:"created"`
	StartedAt    time.Time         `json:"started_at"`
	FinishedAt   time.Time         `json:"finished_at"`
}

const recordFile = "machine.json"

// Files of a machine's directory.
const (
	rootDisk   = "root.qcow2"
	pidFile    = "qemu.pid"
	qmpSocket  = "qmp.sock"
	sshSocket  = "ssh.sock"
	consoleLog = "console.log"
)

// Files of an image directory besides the kernel, initrd and base.img.
const (
	toolsDisk = "tools.img" // the trusted tools, an ext4 mounted at /.tuxlab
	toolsID   = "tools.id"  // "<tools image> <its id>"
)

// dir is machine id's directory.
func (r *Runtime) dir(id string) string { return filepath.Join(r.opts.StateDir, id) }

// path is file name of machine id's directory.
func (r *Runtime) path(id, name string) string { return filepath.Join(r.dir(id), name) }

// validID reports whether id could be a machine's id (so never a path).
func validID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// load reads machine id's record: sandbox.ErrGone if there is none.
func (r *Runtime) load(id string) (*record, error) {
	if !validID(id) {
		return nil, fmt.Errorf("%w: no machine %q", sandbox.ErrGone, id)
	}
	b, err := os.ReadFile(r.path(id, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no machine %s", sandbox.ErrGone, id)
	}
	if err != nil {
		return nil, fmt.Errorf("read machine %s: %w", id, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("machine %s: %s: %w", id, recordFile, err)
	}
	return &rec, nil
}

// save writes rec atomically (a reader never sees half a file).
func (r *Runtime) save(rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.path(rec.ID, recordFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write machine %s: %w", rec.ID, err)
	}
	if err := os.Rename(tmp, r.path(rec.ID, recordFile)); err != nil {
		return fmt.Errorf("write machine %s: %w", rec.ID, err)
	}
	return nil
}

// pid returns the pid of machine id's QEMU process when it runs, else 0. The
// pidfile alone is not proof: the process must be a QEMU started for this
// machine (its command line names the machine's directory), so a reused pid
// is not mistaken for it.
func (r *Runtime) pid(id string) int {
	b, err := os.ReadFile(r.path(id, pidFile))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || !bytes.Contains(cmdline, []byte(r.path(id, qmpSocket))) {
		return 0
	}
	if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		// A zombie (exited, not yet reaped) is not running.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return 0
		}
	}
	return pid
}

// waitGone waits until process pid of machine id has ended, up to d; it
// reports whether it has.
func (r *Runtime) waitGone(id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if r.pid(id) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill ends machine id's QEMU process at once: QMP quit, then SIGKILL.
func (r *Runtime) kill(id string) error {
	pid := r.pid(id)
	if pid == 0 {
		return nil
	}
	if err := r.qmp(id, 3*time.Second, "quit", nil, nil); err == nil && r.waitGone(id, 3*time.Second) {
		return nil
	}
	if pid = r.pid(id); pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill machine %s (pid %d): %w", id, pid, err)
	}
	if !r.waitGone(id, 10*time.Second) {
		return fmt.Errorf("machine %s (pid %d) did not end after SIGKILL", id, pid)
	}
	return nil
}

// state is machine rec's state as the port reports it.
func (r *Runtime) state(rec *record) sandbox.State {
	st := sandbox.State{Created: rec.Created, StartedAt: rec.StartedAt, FinishedAt: rec.FinishedAt, Status: "created"}
	switch {
	case r.pid(rec.ID) != 0:
		st.Running, st.Status, st.FinishedAt = true, "running", time.Time{}
	case !rec.StartedAt.IsZero():
		st.Status = "exited"
		if st.FinishedAt.Before(st.StartedAt) {
			// It ended by itself (poweroff inside, a crash): the console's
			// last write is when.
			st.FinishedAt = time.Now().UTC()
			if fi, err := os.Stat(r.path(rec.ID, consoleLog)); err == nil && fi.ModTime().After(rec.StartedAt) {
				st.FinishedAt = fi.ModTime().UTC()
			}
		}
	}
	return st
}

// bootLogTail returns the last n bytes of machine id's console log, for
// error messages about a machine that does not come up.
func (r *Runtime) bootLogTail(id string, n int64) string {
	f, err := os.Open(r.path(id, consoleLog))
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, 0)
	}
	b := make([]byte, n)
	k, _ := f.Read(b)
	return string(b[:k])
}
