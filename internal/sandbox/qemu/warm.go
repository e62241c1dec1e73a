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
	"strings"
	"time"

	"tuxlab/internal/sandbox"
)

// Warm start: a machine booted once and saved (QEMU's migration stream to a
// file, after its caches were dropped), which later machines restore from in
// about a second instead of booting for a minute or more under TCG. A warm
// template is kept per device layout under StateDir/warm/<key>/: root.qcow2
// (read-only, the booted disk, which each clone's overlay is backed by),
// state (the memory and devices) and warm.json. The layout is what QEMU's
// device tree and the saved memory depend on: the image, memory, vCPUs, the
// number of blank disks, the tools disk or not, the NIC or not (layoutKey).
// A machine of a layout with a template restores from it; others boot cold.
// Each clone has its own blank disks (new qcow2 files of its own sizes: a
// size that differs from the template's is announced to the guest with
// block_resize after the restore) and the image's read-only tools disk.
//
// Clones share what the template had in memory: the clock, the RNG state,
// machine-id, SSH host keys and the host name. Start renews them right
// after the restore, over the host channel, before the machine is handed
// out, and grows the root disk to the clone's bound (QMP block_resize, then
// resize2fs in the guest). journald is restarted after the new machine-id:
// it writes under /var/log/journal/<machine-id>/ and journalctl reads only the
// current id's directory, so a journald left on the template's id showed an
// empty journal (seen in TestWarmStart). The RNG: 64 bytes from the host's are written to
// /dev/urandom, which only mixes them into the input pool, so the kernel is
// then made to reseed from it (ioctl RNDRESEEDCRNG, 0x5207, through perl:
// Debian's cloud kernel has no vmgenid driver); without the reseed two
// clones made the same SSH host keys (seen in TestWarmStart).

type warmMeta struct {
	ImageDir     string `json:"image_dir"`
	MemoryMB     int    `json:"memory_mb"`
	CPUs         int    `json:"cpus"`
	ExtraDisksMB []int  `json:"extra_disks_mb,omitempty"` // the template's blank disks' sizes
	Tools        bool   `json:"tools,omitempty"`
	Network      string `json:"network"`
	DiskMB       int    `json:"disk_mb"`
	MachineID    string `json:"machine_id"` // the template's, which clones must not keep
}

// layoutKey is what a warm state's device tree and memory depend on, for
// machine rec: a machine restores only a state saved with the same key.
func layoutKey(rec *record) string {
	return fmt.Sprintf("%s\x00mem=%d\x00cpus=%d\x00disks=%d\x00tools=%t\x00net=%s",
		rec.ImageDir, rec.MemoryMB, rec.CPUs, len(rec.ExtraDisksMB), rec.Tools, rec.Network)
}

// warmDir is the template directory for machine rec's layout.
func (r *Runtime) warmDir(rec *record) string {
	sum := sha256.Sum256([]byte(layoutKey(rec)))
	return filepath.Join(r.opts.StateDir, "warm", hex.EncodeToString(sum[:8]))
}

// warmFor returns the complete warm template a machine of rec restores
// from, or "" when it must boot cold.
func (r *Runtime) warmFor(rec *record) string {
	if isSegment(rec.Network) {
		return "" // each member's address is its own: no warm segment machines yet
	}
	d := r.warmDir(rec)
	if _, err := os.Stat(filepath.Join(d, "warm.json")); err != nil {
		return ""
	}
	return d
}

// WarmReady reports whether machines of spec s restore from a warm template
// (PrepareWarm made one for its layout); false for an invalid spec.
func (r *Runtime) WarmReady(s sandbox.Spec) bool {
	rec, err := r.recordOf(s)
	return err == nil && rec.Warm != ""
}

// PrepareWarm makes the warm template for the layout of spec s (its image,
// memory, vCPUs, number of blank disks, tools disk and network; its name,
// host name, labels and sizes do not matter) unless there is one: it boots a
// machine of that layout cold, waits until systemd says the system is up,
// drops its caches and saves it. It takes a cold boot's time. Two
// concurrent calls for one layout both boot; the first to finish is kept.
func (r *Runtime) PrepareWarm(ctx context.Context, s sandbox.Spec) error {
	s.Name, s.Hostname, s.Labels = "warm-template", "", nil
	rec, err := r.recordOf(s)
	if err != nil || rec.Warm != "" {
		return err
	}
	if isSegment(rec.Network) {
		return fmt.Errorf("%w: no warm start for machines on a segment (network %q)", sandbox.ErrUnsupported, rec.Network)
	}
	wd := r.warmDir(rec)
	fi, err := os.Stat(filepath.Join(rec.ImageDir, "base.img"))
	if err != nil {
		return err
	}
	baseMB := int((fi.Size() + 1<<20 - 1) >> 20)
	s.DiskMB = baseMB
	id, err := r.Create(ctx, s)
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
	tmp := wd + ".tmp-" + id
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
	meta, _ := json.Marshal(warmMeta{ImageDir: rec.ImageDir, MemoryMB: rec.MemoryMB, CPUs: rec.CPUs, ExtraDisksMB: rec.ExtraDisksMB,
		Tools: rec.Tools, Network: rec.Network, DiskMB: baseMB, MachineID: strings.TrimSpace(out.String())})
	if err := os.WriteFile(filepath.Join(tmp, "warm.json"), meta, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, wd); err != nil {
		if _, serr := os.Stat(filepath.Join(wd, "warm.json")); serr == nil {
			return nil // another PrepareWarm made it meanwhile: clones may use it already
		}
		return err
	}
	return nil
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
	// The guest knows the template's disk sizes: announce each of the
	// clone's that differs (QEMU tells the guest its disk changed size), and
	// wait below until the guest sees them.
	wait := ""
	if rec.DiskMB != meta.DiskMB {
		if err := r.qmp(rec.ID, 5*time.Second, "block_resize", map[string]any{"device": "root", "size": int64(rec.DiskMB) << 20}, nil); err != nil {
			return err
		}
		wait += fmt.Sprintf(" vda:%d", int64(rec.DiskMB)<<11)
	}
	for i, mb := range rec.ExtraDisksMB {
		if i < len(meta.ExtraDisksMB) && meta.ExtraDisksMB[i] == mb {
			continue
		}
		if err := r.qmp(rec.ID, 5*time.Second, "block_resize", map[string]any{"device": fmt.Sprintf("disk%d", i+1), "size": int64(mb) << 20}, nil); err != nil {
			return err
		}
		wait += fmt.Sprintf(" vd%c:%d", 'b'+i, int64(mb)<<11)
	}
	if wait != "" {
		wait = "for d in" + wait + `; do # the disks' new sizes in sectors, once the guest sees them
	i=0
	while [ "$(cat /sys/block/${d%:*}/size)" != "${d#*:}" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
done
`
	}
	tools := ""
	if rec.Tools {
		tools = "/usr/local/lib/tuxlab/mount-tools"
	}
	seed, machineID := make([]byte, 64), make([]byte, 16)
	rand.Read(seed)
	rand.Read(machineID)
	now := time.Now()
	script := fmt.Sprintf(`set -e
%s%s
date -u -s @%d.%03d >/dev/null
cat >/dev/urandom
perl -e 'open(my $f, "<", "/dev/urandom") or die; ioctl($f, 0x5207, 0) or die "RNDRESEEDCRNG: $!\n"'
printf '%%s\n' %s >/etc/machine-id
if [ -f /var/lib/dbus/machine-id ]; then ln -sf /etc/machine-id /var/lib/dbus/machine-id; fi
systemctl restart systemd-journald.service
rm -f /etc/ssh/ssh_host_*
ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key
printf '%%s\n' %s >/etc/hostname
hostname %s
resize2fs /dev/vda >/dev/null 2>&1 || true
`, wait, tools, now.Unix(), now.Nanosecond()/1e6, hex.EncodeToString(machineID), quote(rec.Hostname), quote(rec.Hostname))
	var errOut strings.Builder
	code, err := r.Run(ctx, rec.ID, sandbox.ExecSpec{Cmd: []string{"/bin/sh", "-c", script}, User: "root"}, strings.NewReader(string(seed)), io.Discard, &errOut)
	if err != nil || code != 0 {
		return fmt.Errorf("renew machine %s after restore: %d, %v: %s", rec.ID, code, err, errOut.String())
	}
	r.log.Debug("machine restored", "machine", rec.ID, "restore", restored.Sub(begin).Round(time.Millisecond), "renew", time.Since(restored).Round(time.Millisecond))
	return nil
}
