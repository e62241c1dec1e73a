package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/storage"
	"github.com/moby/moby/client"

	"tuxlab/internal/sandbox"
)

// The disk meter measures what sandboxes take on an engine whose storage has
// no quotas (overlay2 on ext4), for the disk watch. The engine's own measure
// of a writable layer (SizeRw) sums file lengths, so a sparse file (lesson
// 11/05's `truncate -s 1G`, lab 11's 4 GiB disk image) counted in full; and
// files deleted while a process holds them open take space in no layer, so
// they were not counted at all.
//
// The meter counts allocated blocks instead, from the engine's host: one
// helper container per engine, tuxlab-disk-meter, with the engine's data
// root mounted read-only and the host's process namespace. For each sandbox
// it runs `du -sk` over the writable layer's directory (overlay2's UpperDir),
// and looks through the open files of the sandbox's processes (found by the
// container id in their cgroup) for deleted ones on the sandbox's root file
// system. The learner can neither reach it nor change what it runs (its
// image is not theirs), and it needs no process slot in the sandbox, so a
// sandbox at its PID limit is measured all the same. To read every directory
// and every process's open files it keeps two capabilities, DAC_READ_SEARCH
// and SYS_PTRACE; it has no network, a read-only root, and runs nothing but
// what tuxlab execs in it. Whoever may exec in it may use the engine's API,
// which grants more than that already (docs/operations.md).
//
// Where the meter cannot measure a container (another storage driver, the
// data root elsewhere, no meter image, a failed exec), the engine's SizeRw
// counts: never less than the data written, more for sparse files.

// meterName is the helper's container name; one serves every install on the
// engine that runs the same helper. The name carries a digest of its image
// and command, so two versions of tuxlab on one engine (a rolling upgrade)
// each use their own instead of replacing each other's; the one no longer
// used ends by itself (meterIdle).
var meterName = func() string {
	sum := sha256.Sum256([]byte(meterImage() + "\x00" + strings.Join(meterCmd, "\x00")))
	return "tuxlab-disk-meter-" + hex.EncodeToString(sum[:4])
}()

// meterManaged is the helper's org.tuxlab.managed label: no install's
// reconciliation, which removes its own containers without a row, looks at it.
const meterManaged = "meter"

// meterImage is the image the meter runs: BusyBox, for its du, stat,
// readlink and grep. This is the one place to switch it to the trusted tools
// image once that lands; the helper is made again when its image changes.
func meterImage() string { return "tuxlab/sandbox-busybox:latest" }

// meterRetry is how long the meter is not tried again after it could not be
// set up, so a missing image costs one warning a minute, not one a measure.
const meterRetry = time.Minute

// meter is the helper container, set up at the first measure.
type meter struct {
	mu       sync.Mutex
	id       string    // the helper's engine id ("" until set up)
	dataRoot string    // the engine's data root, mounted at /engine in the helper
	failedAt time.Time // when setting it up last failed
}

// meterScript runs in the helper. Each line of its input is "ID UPPER": a
// container id and its writable layer's directory in the helper, or "-"
// where the meter cannot see one. It prints "L ID KIB" for each layer, then
// "O ID BYTES" for each container whose processes hold deleted files open
// on its root file system (each file once, however many hold it): one line
// each, however many files, and one process per container's process to find
// them, however many descriptors it has.
const meterScript = `ids=" "
while read -r id up; do
	if [ "$up" != - ]; then
		kib=$(du -sk "$up" 2>/dev/null | cut -f1) && [ -n "$kib" ] && echo "L $id $kib"
	fi
	ids="$ids$id "
done
grep -oHE '[0-9a-f]{64}' /proc/[0-9]*/cgroup 2>/dev/null | sort -u | while IFS=: read -r f id; do
	case $ids in *" $id "*) ;; *) continue ;; esac
	p=${f%/cgroup}
	root=$(stat -L -c %d "$p/root" 2>/dev/null) || continue
	ls -l "$p/fd" 2>/dev/null | awk -v fd="$p/fd/" '/ \(deleted\)$/ { print fd $9 }' |
		xargs -r stat -L -c "$id $root %d %i %b %B" 2>/dev/null
done | awk '$2 == $3 && !seen[$1 " " $3 " " $4]++ { t[$1] += $5 * $6 } END { for (id in t) printf "O %s %.0f\n", id, t[id] }'
`

// changedScript runs in the helper for a running container whose writable
// layer the meter cannot see (a storage driver other than overlay2): its
// input is the paths the engine lists as added or changed, each as
// /proc/PID/root/PATH (PID: one of the container's processes) and ended by
// a NUL. It prints "T BYTES": the blocks they hold on the container's root
// file system, each inode once.
const changedScript = `root=$(stat -L -c %d "$1") || exit 3
xargs -0 -r stat -c '%d %i %b %B %h' 2>/dev/null | awk -v root="$root" '
	$1 != root { next }
	$5 > 1 && seen[$2]++ { next }
	{ t += $3 * $4 }
	END { printf "T %.0f\n", t }'
`

// DiskUsage returns, for each container of ids, the disk space it takes:
// the blocks its writable layer's files hold (so sparse files cost what they
// hold) and the deleted files its processes keep open. A container that no
// longer exists is left out. Containers the meter cannot measure get the
// engine's sum of file lengths, and the error says why beside the full
// answer (a helper that cannot be set up is tried again once a minute).
func (r *Runtime) DiskUsage(ctx context.Context, ids []string) (map[string]int64, error) {
	var errList []error
	root, meterID, err := r.meterReady(ctx)
	if err != nil {
		errList = append(errList, fmt.Errorf("disk meter: %w; the watch counts file lengths instead of blocks meanwhile", err))
	}
	layer := map[string]int64{} // measured by the meter
	open := map[string]int64{}
	gone := map[string]bool{}
	if meterID != "" {
		err := r.measure(ctx, meterID, root, ids, layer, open, gone)
		if err != nil && !errors.Is(err, sandbox.ErrRuntimeUnavailable) && ctx.Err() == nil {
			r.meter.forget(meterID)
			errList = append(errList, fmt.Errorf("disk meter: %w", err))
		} else if err != nil {
			return nil, err
		}
	}
	used := make(map[string]int64, len(ids))
	for _, id := range ids {
		if gone[id] {
			continue
		}
		n, ok := layer[id]
		if !ok {
			var err error
			n, err = r.apparentSize(ctx, id)
			if errors.Is(err, sandbox.ErrGone) {
				continue
			}
			if err != nil {
				errList = append(errList, err)
				continue
			}
		}
		used[id] = n + open[id]
	}
	return used, errors.Join(errList...)
}

// measure runs the meter over ids: the writable layers it can see (overlay2:
// du over the layer's directory; other drivers, while running: the blocks
// of the paths the engine lists as changed) go in layer, the deleted files
// held open in open, and the containers that no longer exist in gone.
func (r *Runtime) measure(ctx context.Context, meterID, root string, ids []string, layer, open map[string]int64, gone map[string]bool) error {
	var input strings.Builder
	type walk struct{ id, proc string }
	var walks []walk
	for _, id := range ids {
		res, err := r.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			gone[id] = true
			continue
		}
		if err != nil {
			return wrap(err)
		}
		c := res.Container
		if c.ID != id {
			return fmt.Errorf("the engine answers %s for container %s", c.ID, id)
		}
		running := c.State != nil && c.State.Running && c.State.Pid > 0
		up, ok := upperIn(c.GraphDriver, root)
		switch {
		case ok:
		case running:
			up = "-"
			walks = append(walks, walk{id, fmt.Sprintf("/proc/%d/root", c.State.Pid)})
		default:
			continue
		}
		fmt.Fprintf(&input, "%s %s\n", id, up)
	}
	if input.Len() == 0 {
		return nil
	}
	out, err := r.runInMeter(ctx, meterID, []string{"/bin/sh", "-c", meterScript}, strings.NewReader(input.String()))
	if err != nil {
		return err
	}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 || (f[0] != "L" && f[0] != "O") {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("unexpected line %q", line)
		}
		if f[0] == "L" {
			layer[f[1]] = n << 10
		} else {
			open[f[1]] = n
		}
	}
	for _, w := range walks {
		n, err := r.measureChanged(ctx, meterID, w.id, w.proc)
		if errors.Is(err, sandbox.ErrGone) {
			gone[w.id] = true
			continue
		}
		if err != nil {
			return err
		}
		layer[w.id] = n
	}
	return nil
}

// measureChanged measures the paths the engine lists as added or changed in
// running container id, through proc (its root as /proc/PID/root shows it
// to the meter), with changedScript.
func (r *Runtime) measureChanged(ctx context.Context, meterID, id, proc string) (int64, error) {
	diff, err := r.c.ContainerDiff(ctx, id, client.ContainerDiffOptions{})
	if err != nil {
		return 0, wrap(err)
	}
	var paths bytes.Buffer
	for _, c := range diff.Changes {
		if c.Kind != container.ChangeDelete {
			paths.WriteString(proc + c.Path)
			paths.WriteByte(0)
		}
	}
	out, err := r.runInMeter(ctx, meterID, []string{"/bin/sh", "-c", changedScript, "changed", proc}, &paths)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(out)
	if len(f) != 2 || f[0] != "T" {
		return 0, fmt.Errorf("unexpected answer %q", out)
	}
	return strconv.ParseInt(f[1], 10, 64)
}

// runInMeter runs cmd in the helper with stdin and returns its output.
func (r *Runtime) runInMeter(ctx context.Context, meterID string, cmd []string, stdin io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	// Each use is marked, so the helper knows it is still wanted (meterCmd).
	cmd = append([]string{"/bin/sh", "-c", `: > /run/used; exec "$@"`, "meter"}, cmd...)
	code, err := r.Run(ctx, meterID, sandbox.ExecSpec{Cmd: cmd, User: "0", Dir: "/"}, stdin,
		&limitedWriter{b: &out, n: 1 << 20}, &limitedWriter{b: &errOut, n: 4 << 10})
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("exit %d: %s", code, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// upperIn is an overlay2 writable layer's directory as the meter sees it
// (under /engine), if it lies in the engine's data root.
func upperIn(d *storage.DriverData, root string) (string, bool) {
	if d == nil || d.Name != "overlay2" || d.Data["UpperDir"] == "" {
		return "", false
	}
	rel, err := filepath.Rel(root, d.Data["UpperDir"])
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || strings.ContainsAny(rel, "\n\r") {
		return "", false
	}
	return path.Join("/engine", filepath.ToSlash(rel)), true
}

// apparentSize is the engine's measure of a container's writable layer: the
// sum of its files' lengths.
func (r *Runtime) apparentSize(ctx context.Context, id string) (int64, error) {
	res, err := r.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{Size: true})
	if err != nil {
		return 0, wrap(err)
	}
	if res.Container.SizeRw == nil {
		return 0, nil
	}
	return *res.Container.SizeRw, nil
}

// meterReady returns the engine's data root and the running helper's id,
// setting the helper up when it is not. After a failure it answers the same
// failure for meterRetry without trying again.
func (r *Runtime) meterReady(ctx context.Context) (root, id string, err error) {
	m := &r.meter
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id != "" {
		return m.dataRoot, m.id, nil
	}
	if !m.failedAt.IsZero() && time.Since(m.failedAt) < meterRetry {
		return "", "", nil // said a moment ago
	}
	root, id, err = r.setUpMeter(ctx)
	if err != nil {
		m.failedAt = time.Now()
		return "", "", err
	}
	m.id, m.dataRoot, m.failedAt = id, root, time.Time{}
	return root, id, nil
}

// forget drops the helper after a failed exec, so the next measure checks it
// again (the engine may have restarted, or someone removed it).
func (m *meter) forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.id == id {
		m.id = ""
	}
}

// setUpMeter finds the helper running as it should (image, data root), or
// starts it, or makes it.
func (r *Runtime) setUpMeter(ctx context.Context) (root, id string, err error) {
	info, err := r.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", "", wrap(err)
	}
	root = info.Info.DockerRootDir
	if root == "" {
		return "", "", errors.New("the engine does not say where its data root is")
	}
	for range 3 { // another process may be making or replacing it at the same moment
		res, err := r.c.ContainerInspect(ctx, meterName, client.ContainerInspectOptions{})
		switch {
		case cerrdefs.IsNotFound(err):
			id, err = r.createMeter(ctx, root)
			if cerrdefs.IsConflict(err) {
				continue
			}
			if err != nil {
				return "", "", err
			}
		case err != nil:
			return "", "", wrap(err)
		case !meterCurrent(res.Container, root):
			_, err := r.c.ContainerRemove(ctx, res.Container.ID, client.ContainerRemoveOptions{Force: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				return "", "", wrap(err)
			}
			continue
		default:
			id = res.Container.ID
			if res.Container.State != nil && res.Container.State.Running {
				return root, id, nil
			}
		}
		if _, err := r.c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			return "", "", wrap(err)
		}
		return root, id, nil
	}
	return "", "", errors.New("the helper container " + meterName + " keeps changing")
}

// meterCurrent reports whether the helper c runs today's image and command over root.
func meterCurrent(c container.InspectResponse, root string) bool {
	if c.Config == nil || c.Config.Image != meterImage() || !slices.Equal(c.Config.Cmd, meterCmd) || c.HostConfig == nil {
		return false
	}
	for _, b := range c.HostConfig.Binds {
		if b == root+":/engine:ro" {
			return true
		}
	}
	return false
}

// meterIdle is how long the helper waits unused before it ends, removing
// itself (AutoRemove): while a tuxlab process watches, it measures every few
// seconds; once none does, nothing of tuxlab keeps running on the engine.
const meterIdle = 10 * time.Minute

// meterCmd is the helper's command: it exits once /run/used, touched by
// every use (runInMeter), is older than meterIdle.
var meterCmd = []string{"/bin/sh", "-c", `trap 'exit 0' TERM INT; : > /run/used
while sleep 30 & wait $!; do
  [ $(( $(date +%s) - $(stat -c %Y /run/used) )) -lt ` + strconv.Itoa(int(meterIdle.Seconds())) + ` ] || exit 0
done`}

// createMeter makes the helper: the host's process namespace, the engine's
// data root read-only, two capabilities to read what those show, nothing
// else (no network, a read-only root but for a small /run, limits). It
// removes itself once unused for meterIdle, and after an engine restart;
// the next measure makes it again.
func (r *Runtime) createMeter(ctx context.Context, root string) (string, error) {
	init := true
	pids := int64(64)
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: meterName,
		Config: &container.Config{
			Image: meterImage(), User: "0",
			Cmd:    meterCmd,
			Labels: map[string]string{sandbox.LabelManaged: meterManaged},
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "none", PidMode: "host", UsernsMode: "host",
			Binds:          []string{root + ":/engine:ro"},
			CapDrop:        []string{"ALL"},
			CapAdd:         []string{"DAC_READ_SEARCH", "SYS_PTRACE"},
			SecurityOpt:    []string{"no-new-privileges:true"},
			ReadonlyRootfs: true,
			Tmpfs:          map[string]string{"/run": "size=64k"},
			Init:           &init,
			AutoRemove:     true,
			LogConfig:      container.LogConfig{Type: "none"},
			Resources:      container.Resources{Memory: 128 << 20, MemorySwap: 128 << 20, NanoCPUs: 500_000_000, PidsLimit: &pids},
		},
	})
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", err
		}
		return "", fmt.Errorf("creating the helper container %s from %s (scripts/build-images.sh busybox): %w", meterName, meterImage(), wrap(err))
	}
	return res.ID, nil
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
