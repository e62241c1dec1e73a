package qemu

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"tuxlab/internal/sandbox"
)

// Warm start: a machine booted once and saved (QEMU's migration stream to a
// file, after its caches were dropped), which later machines restore from in
// about a second instead of booting for a minute or more under TCG. A warm
// template is kept per image and memory size under StateDir/warm/<key>/:
// root.qcow2 (read-only, the booted disk, which each clone's overlay is
// backed by), state (the memory and devices) and warm.json. Only machines of
// the template's device layout restore from it: one vCPU, no extra disk, no
// network, the template's memory; others boot cold.
//
// Clones share what the template had in memory: the clock, the RNG state,
// machine-id, SSH host keys and the host name. Start renews them right
// after the restore, over the host channel, before the machine is handed
// out, and grows the root disk to the clone's bound (QMP block_resize, then
// resize2fs in the guest). The RNG: 64 bytes from the host's are written to
// /dev/urandom, which only mixes them into the input pool, so the kernel is
// then made to reseed from it (ioctl RNDRESEEDCRNG, 0x5207, through perl:
// Debian's cloud kernel has no vmgenid driver); without the reseed two
// clones made the same SSH host keys (seen in TestWarmStart).

type warmMeta struct {
	ImageDir  string `json:"image_dir"`
	MemoryMB  int    `json:"memory_mb"`
	DiskMB    int    `json:"disk_mb"`
	MachineID string `json:"machine_id"` // the template's, which clones must not keep
}

// warmDir is the template directory for image directory dir and memory mb.
func (r *Runtime) warmDir(dir string, mb int) string {
	sum := sha256.Sum256([]byte(dir + "\x00" + strconv.Itoa(mb)))
	return filepath.Join(r.opts.StateDir, "warm", hex.EncodeToString(sum[:8]))
}

// warmFor returns the complete warm template a machine of rec restores
// from, or "" when it must boot cold.
func (r *Runtime) warmFor(rec *record) string {
	if len(rec.ExtraDisksMB) > 0 || rec.CPUs != 1 || rec.Network != "none" {
		return ""
	}
	d := r.warmDir(rec.ImageDir, rec.MemoryMB)
	if _, err := os.Stat(filepath.Join(d, "warm.json")); err != nil {
		return ""
	}
	return d
}

// PrepareWarm makes the warm template for image and memoryMB unless it is
// there: it boots a machine cold, waits until systemd says the system is up,
// drops its caches and saves it. It takes a cold boot's time.
func (r *Runtime) PrepareWarm(ctx context.Context, image string, memoryMB int) error {
	dir := r.imageDir(image)
	if dir == "" {
		return fmt.Errorf("%w: no machine image %q in %s", sandbox.ErrRuntimeUnavailable, image, r.opts.ImageDir)
	}
	wd := r.warmDir(dir, memoryMB)
	if _, err := os.Stat(filepath.Join(wd, "warm.json")); err == nil {
		return nil
	}
	fi, err := os.Stat(filepath.Join(dir, "base.img"))
	if err != nil {
		return err
	}
	baseMB := int((fi.Size() + 1<<20 - 1) >> 20)
	id, err := r.Create(ctx, sandbox.Spec{Name: "warm-template", Image: image, MemoryBytes: int64(memoryMB) << 20, DiskMB: baseMB})
	if err != nil {
		return err
	}
	defer r.Remove(context.WithoutCancel(ctx), id)
	if err := r.Start(ctx, id); err != nil {
		return err
	}
	var out strings.Builder
	script := "systemctl is-system-running --wait >/dev/null 2>&1; cat /etc/machine-id; sync; echo 3 > /proc/sys/vm/drop_caches"
	if code, err := r.Run(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"}, nil, &out, io.Discard); err != nil || code != 0 {
		return fmt.Errorf("warm template: %d, %w", code, err)
	}
	// The guest's sshd ends with the connection; systemd starts another,
	// which waits for the next host to connect: the one of each clone.
	r.ch.closeMachine(id)
	time.Sleep(time.Second)
	tmp := wd + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := r.migrateTo(ctx, id, filepath.Join(tmp, "state")); err != nil {
		return err
	}
	if err := r.kill(id); err != nil {
		return err
	}
	if err := os.Rename(r.path(id, rootDisk), filepath.Join(tmp, "root.qcow2")); err != nil {
		return err
	}
	os.Chmod(filepath.Join(tmp, "root.qcow2"), 0o400)
	meta, _ := json.Marshal(warmMeta{ImageDir: dir, MemoryMB: memoryMB, DiskMB: baseMB, MachineID: strings.TrimSpace(out.String())})
	if err := os.WriteFile(filepath.Join(tmp, "warm.json"), meta, 0o600); err != nil {
		return err
	}
	os.RemoveAll(wd)
	return os.Rename(tmp, wd)
}

// migrateTo saves machine id's state to file (it is paused after) and waits
// until the stream is complete.
func (r *Runtime) migrateTo(ctx context.Context, id, file string) error {
	if err := r.qmp(id, 5*time.Second, "migrate", map[string]any{"uri": "exec:cat > " + quote(file)}, nil); err != nil {
		return err
	}
	for {
		var st struct {
			Status string `json:"status"`
			Error  string `json:"error-desc"`
		}
		if err := r.qmp(id, 5*time.Second, "query-migrate", nil, &st); err != nil {
			return err
		}
		switch st.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("save machine %s: migration %s: %s", id, st.Status, st.Error)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// finishWarm waits for machine rec's restore to end and renews what it
// shares with its template; a machine that fails this is killed.
func (r *Runtime) finishWarm(ctx context.Context, rec *record) error {
	var meta warmMeta
	b, err := os.ReadFile(filepath.Join(rec.Warm, "warm.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		return fmt.Errorf("warm template %s: %w", rec.Warm, err)
	}
	begin := time.Now()
	for { // -incoming: the machine runs once the state is loaded
		var st struct {
			Status string `json:"status"`
		}
		if err := r.qmp(rec.ID, 5*time.Second, "query-status", nil, &st); err != nil {
			return err
		}
		if st.Status == "running" {
			break
		}
		if st.Status != "inmigrate" && st.Status != "prelaunch" {
			return fmt.Errorf("restore machine %s: status %s", rec.ID, st.Status)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	restored := time.Now()
	if rec.DiskMB > meta.DiskMB {
		if err := r.qmp(rec.ID, 5*time.Second, "block_resize", map[string]any{"device": "root", "size": int64(rec.DiskMB) << 20}, nil); err != nil {
			return err
		}
	}
	seed, machineID := make([]byte, 64), make([]byte, 16)
	rand.Read(seed)
	rand.Read(machineID)
	now := time.Now()
	script := fmt.Sprintf(`set -e
date -u -s @%d.%03d >/dev/null
cat >/dev/urandom
perl -e 'open(my $f, "<", "/dev/urandom") or die; ioctl($f, 0x5207, 0) or die "RNDRESEEDCRNG: $!\n"'
printf '%%s\n' %s >/etc/machine-id
if [ -f /var/lib/dbus/machine-id ]; then ln -sf /etc/machine-id /var/lib/dbus/machine-id; fi
rm -f /etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key
printf '%%s\n' %s >/etc/hostname
hostname %s
resize2fs /dev/vda >/dev/null 2>&1 || true
`, now.Unix(), now.Nanosecond()/1e6, hex.EncodeToString(machineID), quote(rec.Hostname), quote(rec.Hostname))
	var errOut strings.Builder
	code, err := r.Run(ctx, rec.ID, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"}, strings.NewReader(string(seed)), io.Discard, &errOut)
	if err != nil || code != 0 {
		return fmt.Errorf("renew machine %s after restore: %d, %v: %s", rec.ID, code, err, errOut.String())
	}
	r.log.Debug("machine restored", "machine", rec.ID, "restore", restored.Sub(begin).Round(time.Millisecond), "renew", time.Since(restored).Round(time.Millisecond))
	return nil
}
