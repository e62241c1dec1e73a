// Package qemu is the sandbox runtime for machines: each sandbox is a QEMU
// virtual machine with its own kernel, systemd as PID 1, a copy-on-write
// root disk over a shared base image whose size is its hard disk bound,
// blank extra disks, and no network or one that cannot reach the host.
//
// The driver needs no daemon: each machine is a QEMU process (daemonized, so
// it outlives a restart of tuxlab) with a directory of its own under
// StateDir holding its disks, its record (labels, limits), its sockets (QMP
// for control, ssh.sock for the host channel) and its console log. Commands
// and terminals go over SSH on a virtio-serial port (channel.go), so the
// guest needs no network for them. The image comes from
// scripts/build-machine-image.sh. See docs/machines.md.
package qemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Options configure the driver.
type Options struct {
	// ImageDir holds the machine images, one directory each
	// ({vmlinuz,initrd.img,base.img,kernel.release}); Spec.Image names one
	// ("current" is the newest the build script made). Default
	// /var/lib/tuxlab/machine.
	ImageDir string
	// StateDir holds one directory per machine and the install's channel
	// key. Default /var/lib/tuxlab/machines.
	StateDir string
	// Accel is "kvm", "tcg" or "" for the first that works: KVM when
	// /dev/kvm opens and a canary kernel really boots under it, else TCG.
	Accel string
	// QEMU and QemuImg are the programs (default from PATH).
	QEMU, QemuImg string
	// DefaultDiskMB is a machine's disk bound when Spec.DiskMB is 0
	// (default 4096).
	DefaultDiskMB int
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultImageDir = "/var/lib/tuxlab/machine"
	DefaultStateDir = "/var/lib/tuxlab/machines"
	DefaultImage    = "current"
	defaultDiskMB   = 4096
	defaultMemoryMB = 512
	minMemoryMB     = 192
	maxExtraDisks   = 8
)

// NetworkUser is a network a machine may have besides none and a private
// segment (EnsureNetwork): one NIC on QEMU's user-mode network with
// restrict=on, so the guest gets an address by DHCP but has no route
// anywhere, the host's services included.
const NetworkUser = "user"

// isSegment reports whether network (a record's) is a private segment.
func isSegment(network string) bool { return network != "none" && network != NetworkUser }

// Runtime implements sandbox.Runtime with QEMU.
type Runtime struct {
	opts  Options
	log   *slog.Logger
	key   ssh.Signer
	ch    channels
	locks sync.Map // machine id → *sync.Mutex: one lifecycle change at a time
	// hostsWritten is, per machine id, the segment's members last written
	// into its /etc/hosts (syncHosts).
	hostsWritten sync.Map
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a driver keeping its machines under opts.StateDir (made if
// missing, with the install's channel key). It starts nothing.
func New(opts Options) (*Runtime, error) {
	if opts.ImageDir == "" {
		opts.ImageDir = DefaultImageDir
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.QEMU == "" {
		opts.QEMU = "qemu-system-x86_64"
	}
	if opts.QemuImg == "" {
		opts.QemuImg = "qemu-img"
	}
	if opts.DefaultDiskMB == 0 {
		opts.DefaultDiskMB = defaultDiskMB
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	switch opts.Accel {
	case "", "kvm", "tcg":
	default:
		return nil, fmt.Errorf("machine accelerator %q: want kvm, tcg or empty", opts.Accel)
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("machines' directory: %w", err)
	}
	key, err := loadKey(opts.StateDir)
	if err != nil {
		return nil, err
	}
	return &Runtime{opts: opts, log: opts.Logger, key: key, ch: channels{clients: map[string]*ssh.Client{}}}, nil
}

func (r *Runtime) lock(id string) func() {
	m, _ := r.locks.LoadOrStore(id, &sync.Mutex{})
	m.(*sync.Mutex).Lock()
	return m.(*sync.Mutex).Unlock
}

// Ping checks that QEMU and qemu-img are installed and StateDir is usable.
func (r *Runtime) Ping(ctx context.Context) error {
	for _, p := range []string{r.opts.QEMU, r.opts.QemuImg} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%w: %s is not installed (apt-get install qemu-system-x86 qemu-utils): %w", sandbox.ErrRuntimeUnavailable, p, err)
		}
	}
	if fi, err := os.Stat(r.opts.StateDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: machines' directory %s: %v", sandbox.ErrRuntimeUnavailable, r.opts.StateDir, err)
	}
	return ctx.Err()
}

var imageName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// imageDir resolves image to its directory, or "" when it is not there
// complete.
func (r *Runtime) imageDir(image string) string {
	if !imageName.MatchString(image) {
		return ""
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(r.opts.ImageDir, image))
	if err != nil {
		return ""
	}
	for _, f := range []string{"vmlinuz", "initrd.img", "base.img"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			return ""
		}
	}
	return dir
}

// ImageExists reports whether image is a complete machine image in ImageDir.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	return r.imageDir(image) != "", ctx.Err()
}

// KernelRelease returns the kernel release of image (what `uname -r` says
// inside its machines).
func (r *Runtime) KernelRelease(image string) (string, error) {
	dir := r.imageDir(image)
	if dir == "" {
		return "", fmt.Errorf("no machine image %q in %s", image, r.opts.ImageDir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "kernel.release"))
	return strings.TrimSpace(string(b)), err
}

// ProbeDiskQuota: a machine's root disk always has a hard bound, its
// overlay's virtual size.
func (r *Runtime) ProbeDiskQuota(ctx context.Context, image string) error { return ctx.Err() }

// ToolsVolume returns the name of the tools disk of the current machine
// image (tuxlab-tools-<short id of the tools image it was built from>),
// which Spec.ToolsVolume then names. The disk (tools.img) is built with the
// machine image from image's /tuxlab by scripts/build-machine-image.sh:
// sandbox.ErrToolsMissing when the machine image has none or was built from
// another tools image.
func (r *Runtime) ToolsVolume(ctx context.Context, image string) (string, error) {
	dir := r.imageDir(DefaultImage)
	name, built := toolsOf(dir)
	switch {
	case name == "":
		return "", fmt.Errorf("%w: the machine image in %s has no tools disk: run ./scripts/build-machine-image.sh", sandbox.ErrToolsMissing, r.opts.ImageDir)
	case built != image:
		return "", fmt.Errorf("%w: the machine image's tools disk is built from %s, not %s: run ./scripts/build-machine-image.sh", sandbox.ErrToolsMissing, built, image)
	}
	return name, ctx.Err()
}

// toolsOf returns the name of image directory dir's tools disk and the tools
// image it was built from (tools.id: "<image> <id>"), or "" when dir has no
// tools disk.
func toolsOf(dir string) (name, image string) {
	if dir == "" {
		return "", ""
	}
	b, err := os.ReadFile(filepath.Join(dir, toolsID))
	f := strings.Fields(string(b))
	if err != nil || len(f) != 2 {
		return "", ""
	}
	if fi, err := os.Stat(filepath.Join(dir, toolsDisk)); err != nil || !fi.Mode().IsRegular() {
		return "", ""
	}
	id := strings.TrimPrefix(f[1], "sha256:")
	return "tuxlab-tools-" + id[:min(12, len(id))], f[0]
}

// Changes: a machine's changes are blocks of its disk, not files: not
// supported (sandbox.ErrUnsupported) for a machine that exists.
func (r *Runtime) Changes(ctx context.Context, id string) ([]sandbox.Change, error) {
	if _, err := r.load(id); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: machines do not list changed files", sandbox.ErrUnsupported)
}

// DiskUsage returns the space each machine's disks take on the host: the
// allocated blocks of its overlay and extra disks. A running machine is
// asked to write its caches first (`sync`, over a channel already open), so
// what the guest wrote a moment ago counts.
func (r *Runtime) DiskUsage(ctx context.Context, ids []string) (map[string]int64, error) {
	usage := map[string]int64{}
	for _, id := range ids {
		rec, err := r.load(id)
		if err != nil {
			continue
		}
		r.syncGuest(ctx, id)
		var total int64
		for _, f := range r.diskFiles(rec) {
			var st syscall.Stat_t
			if err := syscall.Stat(f, &st); err == nil {
				total += st.Blocks * 512
			}
		}
		usage[id] = total
	}
	return usage, ctx.Err()
}

// syncGuest runs `sync` in machine id if a root channel is open, within
// syncTimeout; it is best effort.
func (r *Runtime) syncGuest(ctx context.Context, id string) {
	if r.ch.existing(id) == nil || r.pid(id) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	r.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"sync"}, User: "root"}, nil, io.Discard, io.Discard)
}

func (r *Runtime) diskFiles(rec *record) []string {
	files := []string{r.path(rec.ID, rootDisk)}
	for i := range rec.ExtraDisksMB {
		files = append(files, r.path(rec.ID, extraDisk(i)))
	}
	return files
}

func extraDisk(i int) string { return fmt.Sprintf("disk%d.qcow2", i+1) }

var hostnamePattern = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$`)

// Create makes a machine's directory, its overlay over the image's base (of
// virtual size s.DiskMB, at least the base's size), its blank extra disks
// and its record. Nothing starts. A failed Create leaves nothing behind.
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec) (string, error) {
	rec, err := r.recordOf(s)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(r.dir(rec.ID), 0o700); err != nil {
		return "", fmt.Errorf("machine directory: %w", err)
	}
	if err := r.createDisks(ctx, rec); err != nil {
		os.RemoveAll(r.dir(rec.ID))
		return "", err
	}
	if isSegment(rec.Network) {
		if err := r.join(rec); err != nil {
			os.RemoveAll(r.dir(rec.ID))
			return "", err
		}
	}
	if err := r.save(rec); err != nil {
		if isSegment(rec.Network) {
			r.leave(rec.Network, rec.ID)
		}
		os.RemoveAll(r.dir(rec.ID))
		return "", err
	}
	return rec.ID, nil
}

// recordOf validates s and returns the new machine's record.
func (r *Runtime) recordOf(s sandbox.Spec) (*record, error) {
	network := s.Network
	switch network {
	case "", "none":
		network = "none"
	case NetworkUser:
	default: // a private segment (network.go): it must exist
		if _, err := r.loadNetwork(network); err != nil {
			return nil, err
		}
	}
	dir := r.imageDir(s.Image)
	if dir == "" {
		return nil, fmt.Errorf("%w: no machine image %q in %s: run ./scripts/build-machine-image.sh", sandbox.ErrRuntimeUnavailable, s.Image, r.opts.ImageDir)
	}
	fi, err := os.Stat(filepath.Join(dir, "base.img"))
	if err != nil {
		return nil, err
	}
	baseMB := int((fi.Size() + 1<<20 - 1) >> 20)
	if s.ToolsVolume != "" {
		if name, _ := toolsOf(dir); name != s.ToolsVolume {
			return nil, fmt.Errorf("%w: the machine image %s has no tools disk %q (it has %q)", sandbox.ErrToolsMissing, dir, s.ToolsVolume, name)
		}
	}
	rec := &record{
		ID: newID(), Name: s.Name, Labels: maps.Clone(s.Labels), ImageDir: dir,
		Hostname: s.Hostname, User: s.User, Network: network,
		MemoryMB: int(s.MemoryBytes >> 20), CPUs: int((s.NanoCPUs + 999_999_999) / 1_000_000_000),
		DiskMB: s.DiskMB, ExtraDisksMB: slicesClone(s.ExtraDisksMB), Tools: s.ToolsVolume != "", Created: time.Now().UTC(),
	}
	if rec.Hostname == "" {
		rec.Hostname = "machine"
	}
	if rec.MemoryMB == 0 {
		rec.MemoryMB = defaultMemoryMB
	}
	if rec.CPUs == 0 {
		rec.CPUs = 1
	}
	rec.CPUs = min(rec.CPUs, runtime.NumCPU())
	if rec.DiskMB == 0 {
		rec.DiskMB = max(r.opts.DefaultDiskMB, baseMB)
	}
	var problems []string
	if !hostnamePattern.MatchString(rec.Hostname) {
		problems = append(problems, fmt.Sprintf("hostname %q is not a host name", rec.Hostname))
	}
	if rec.MemoryMB < minMemoryMB {
		problems = append(problems, fmt.Sprintf("memory %d MiB is below a machine's %d MiB", rec.MemoryMB, minMemoryMB))
	}
	if rec.DiskMB < baseMB {
		problems = append(problems, fmt.Sprintf("disk %d MiB is below the image's %d MiB", rec.DiskMB, baseMB))
	}
	if len(rec.ExtraDisksMB) > maxExtraDisks {
		problems = append(problems, fmt.Sprintf("%d extra disks, at most %d", len(rec.ExtraDisksMB), maxExtraDisks))
	}
	for i, mb := range rec.ExtraDisksMB {
		if mb < 1 {
			problems = append(problems, fmt.Sprintf("extra disk %d: %d MiB", i+1, mb))
		}
	}
	if len(problems) > 0 {
		return nil, errs.Errorf(errs.Invalid, "Machine: %s", strings.Join(problems, "; "))
	}
	rec.Warm = r.warmFor(rec)
	return rec, nil
}

func slicesClone(s []int) []int {
	if len(s) == 0 {
		return nil
	}
	return append([]int(nil), s...)
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *Runtime) createDisks(ctx context.Context, rec *record) error {
	base, format := filepath.Join(rec.ImageDir, "base.img"), "raw"
	if rec.Warm != "" {
		base, format = filepath.Join(rec.Warm, "root.qcow2"), "qcow2"
	}
	args := [][]string{{"create", "-q", "-f", "qcow2", "-b", base, "-F", format, r.path(rec.ID, rootDisk), strconv.Itoa(rec.DiskMB) + "M"}}
	for i, mb := range rec.ExtraDisksMB {
		args = append(args, []string{"create", "-q", "-f", "qcow2", r.path(rec.ID, extraDisk(i)), strconv.Itoa(mb) + "M"})
	}
	for _, a := range args {
		if out, err := exec.CommandContext(ctx, r.opts.QemuImg, a...).CombinedOutput(); err != nil {
			return fmt.Errorf("qemu-img %s: %w: %s", strings.Join(a, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Start boots a created or stopped machine (a running one changes nothing).
// It returns once QEMU runs; the guest boots on, and Exec and Run wait for
// it.
func (r *Runtime) Start(ctx context.Context, id string) error {
	defer r.lock(id)()
	rec, err := r.load(id)
	if err != nil {
		return err
	}
	if r.pid(id) != 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(rec.ImageDir, "base.img")); err != nil {
		return fmt.Errorf("%w: machine %s's image is gone (%s): %w", sandbox.ErrRuntimeUnavailable, id, rec.ImageDir, err)
	}
	var nic, words []string
	if isSegment(rec.Network) {
		if nic, words, err = r.segmentArgs(rec); err != nil {
			return err
		}
	}
	r.ch.closeMachine(id)
	accel := r.accel(ctx, filepath.Join(rec.ImageDir, "vmlinuz"))
	for _, f := range []string{qmpSocket, sshSocket, pidFile} {
		os.Remove(r.path(id, f))
	}
	os.Truncate(r.path(id, consoleLog), 0)
	cmd := exec.CommandContext(ctx, r.opts.QEMU, r.args(rec, accel, nic, words)...)
	cmd.Dir = r.dir(id)
	// QEMU forks itself into the background (-daemonize) once its devices
	// are ready: it then belongs to no tuxlab process group or session.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("start machine %s: %s: %w: %s", id, r.opts.QEMU, err, strings.TrimSpace(string(out)))
	}
	if r.pid(id) == 0 {
		return fmt.Errorf("start machine %s: QEMU exited at once: %s", id, r.bootLogTail(id, 2000))
	}
	if rec.Warm != "" && rec.StartedAt.IsZero() {
		if err := r.finishWarm(ctx, rec); err != nil {
			r.ch.closeMachine(id)
			r.kill(id)
			return err
		}
	}
	rec.StartedAt = time.Now().UTC()
	if err := r.save(rec); err != nil {
		return err
	}
	if isSegment(rec.Network) {
		r.announce(rec.Network, id)
	}
	return nil
}

// args is QEMU's command line for rec; nic and words are its NIC on a
// segment and the kernel command line's words for it (segmentArgs).
func (r *Runtime) args(rec *record, accel string, nic, words []string) []string {
	p := func(name string) string { return r.path(rec.ID, name) }
	a := []string{
		"-name", "tuxlab-" + rec.ID,
		"-M", "q35", "-m", strconv.Itoa(rec.MemoryMB), "-smp", strconv.Itoa(rec.CPUs),
		"-nodefaults", "-no-user-config", "-display", "none",
		"-pidfile", p(pidFile), "-daemonize",
		// Seccomp: no obsolete syscalls, no scheduler or affinity changes.
		// (spawn=deny would kill -daemonize's fork, and
		// elevateprivileges=deny makes QEMU 7.2 exit at -daemonize: measured.)
		"-sandbox", "on,obsolete=deny,resourcecontrol=deny",
		"-kernel", filepath.Join(rec.ImageDir, "vmlinuz"), "-initrd", filepath.Join(rec.ImageDir, "initrd.img"),
		"-append", strings.Join(append([]string{
			"console=ttyS0", "root=/dev/vda", "rw", "net.ifnames=0", "panic=-1",
			"systemd.hostname=" + rec.Hostname, "tuxlab.key=" + publicKeyArg(r.key),
		}, words...), " "),
		"-drive", "file=" + p(rootDisk) + ",if=none,id=root,format=qcow2,discard=unmap",
		"-device", "virtio-blk-pci,drive=root",
	}
	if accel == "kvm" {
		a = append(a, "-accel", "kvm", "-cpu", "host")
	} else {
		// A bounded translation cache: TCG's default is 1 GiB per machine.
		a = append(a, "-accel", "tcg,thread=multi,tb-size=128", "-cpu", "max")
	}
	for i := range rec.ExtraDisksMB {
		id := fmt.Sprintf("disk%d", i+1)
		a = append(a, "-drive", "file="+p(extraDisk(i))+",if=none,id="+id+",format=qcow2,discard=unmap",
			"-device", "virtio-blk-pci,drive="+id+",serial=tuxlab-"+id)
	}
	if rec.Tools {
		// The trusted tools, last so the blank disks keep their names;
		// read-only in QEMU, so root in the guest cannot write them either.
		// The guest mounts it at /.tuxlab by its serial (mount-tools).
		a = append(a, "-drive", "file="+filepath.Join(rec.ImageDir, toolsDisk)+",if=none,id=tools,format=raw,readonly=on",
			"-device", "virtio-blk-pci,drive=tools,serial=tuxlab-tools")
	}
	a = append(a,
		"-chardev", "file,id=con,path="+p(consoleLog), "-serial", "chardev:con",
		"-chardev", "socket,id=qmp,path="+p(qmpSocket)+",server=on,wait=off", "-mon", "chardev=qmp,mode=control",
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=channel,path="+p(sshSocket)+",server=on,wait=off",
		"-device", "virtserialport,chardev=channel,name=tuxlab.ssh",
		"-device", "virtio-rng-pci",
	)
	if rec.Warm != "" && rec.StartedAt.IsZero() {
		// The first start restores the warm template's state; later ones
		// boot the machine's own disk cold.
		a = append(a, "-incoming", "exec:cat "+quote(filepath.Join(rec.Warm, "state")))
	}
	if rec.Network == NetworkUser {
		// restrict=on: without it the guest reaches the host's loopback
		// services at 10.0.2.2 (measured: PostgreSQL).
		a = append(a, "-netdev", "user,id=net0,restrict=on", "-device", "virtio-net-pci,netdev=net0")
	}
	a = append(a, nic...)
	return a
}

// Stop shuts machine id down: its caches written (`sync` over an open
// channel), then an ACPI power button press, then QEMU killed after grace.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	defer r.lock(id)()
	rec, err := r.load(id)
	if err != nil {
		return err
	}
	if r.pid(id) != 0 {
		r.syncGuest(ctx, id)
		r.ch.closeMachine(id)
		if err := r.qmp(id, 3*time.Second, "system_powerdown", nil, nil); err != nil {
			r.log.Warn("machine powerdown", "machine", id, "err", err)
		}
		if !r.waitGone(id, grace) {
			if err := r.kill(id); err != nil {
				return err
			}
		}
	}
	if rec.FinishedAt.Before(rec.StartedAt) || rec.FinishedAt.IsZero() {
		rec.FinishedAt = time.Now().UTC()
		return r.save(rec)
	}
	return nil
}

// Remove kills machine id's QEMU if it runs and deletes its directory.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	defer r.lock(id)()
	if _, err := r.load(id); err != nil {
		return err
	}
	r.ch.closeMachine(id)
	if err := r.kill(id); err != nil {
		return err
	}
	if rec, err := r.load(id); err == nil && isSegment(rec.Network) {
		r.leave(rec.Network, id)
	}
	if err := os.RemoveAll(r.dir(id)); err != nil {
		return fmt.Errorf("remove machine %s: %w", id, err)
	}
	r.locks.Delete(id)
	return nil
}

// Inspect returns machine id's state.
func (r *Runtime) Inspect(ctx context.Context, id string) (sandbox.State, error) {
	rec, err := r.load(id)
	if err != nil {
		return sandbox.State{}, err
	}
	return r.state(rec), ctx.Err()
}

// List returns the machines carrying every one of labels.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]sandbox.Instance, error) {
	entries, err := os.ReadDir(r.opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrRuntimeUnavailable, err)
	}
	var list []sandbox.Instance
	for _, e := range entries {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		rec, err := r.load(e.Name())
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, sandbox.ErrGone) {
			continue // being created or removed
		}
		if err != nil {
			return nil, err
		}
		if !hasLabels(rec.Labels, labels) {
			continue
		}
		st := r.state(rec)
		list = append(list, sandbox.Instance{EngineID: rec.ID, Labels: maps.Clone(rec.Labels), State: sandbox.State{Running: st.Running, Status: st.Status}})
	}
	return list, ctx.Err()
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// running loads machine id and checks that it runs: sandbox.ErrGone when
// there is no such machine, sandbox.ErrNotRunning (the refusal) when it is
// not running.
func (r *Runtime) running(id string) (*record, error) {
	rec, err := r.load(id)
	if err != nil {
		return nil, err
	}
	if r.pid(id) == 0 {
		return nil, fmt.Errorf("%w: machine %s", sandbox.ErrNotRunning, id)
	}
	return rec, nil
}
