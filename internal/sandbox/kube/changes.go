package kube

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"tuxlab/internal/sandbox"
)

// Kubernetes has no API that lists what a container changed in its file
// system (Docker's diff). So every pod with the tools lists its image's
// files once, before the sandbox runs: an init container of the sandbox's
// image, which nothing has touched yet, writes the list into the tools
// volume, which the sandbox's container mounts read-only (imageList). Changes
// compares the file system with that list, with the trusted BusyBox only.

// imageListName is the list's file name in the tools volume.
const imageListName = "image.list"

// kubeletFiles are files the kubelet mounts into every container, written
// when the pod starts: never a change of the learner's.
var kubeletFiles = []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"}

// pruned is the find expression that leaves out what is no file of the
// sandbox's own: the kernel's file systems, the tools (at toolsMountDir in
// the init container, sandbox.ToolsDir in the sandbox) and, with kept state,
// the kept directories, which are the claim's and not the image's.
func pruned(state bool) string {
	dirs := []string{"/proc", "/sys", "/dev", toolsMountDir, sandbox.ToolsDir}
	if state {
		dirs = append(dirs, keptDirs...)
	}
	var b strings.Builder
	b.WriteString(`\(`)
	for i, d := range dirs {
		if i > 0 {
			b.WriteString(" -o")
		}
		b.WriteString(" -path " + d)
	}
	b.WriteString(` \) -prune -o`)
	return b.String()
}

// indexContainer is the init container that lists the image's files: the
// sandbox's image as root, before any process of the sandbox runs, with
// the tools volume (which the tools container filled) writable.
func indexContainer(s sandbox.Spec, pull corev1.PullPolicy, state bool) corev1.Container {
	no := false
	root := int64(0)
	bb := toolsMountDir + "/bin/busybox"
	script := bb + ` find / -xdev ` + pruned(state) + ` -print >` + toolsMountDir + `/` + imageListName
	return corev1.Container{
		Name: "index", Image: s.Image, ImagePullPolicy: pull,
		Command: []string{bb, "sh", "-c", script},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: &root,
			// DAC_OVERRIDE: into every directory, as root in the sandbox.
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"DAC_OVERRIDE"}},
			AllowPrivilegeEscalation: &no,
		},
		Resources:    initResources(),
		VolumeMounts: []corev1.VolumeMount{{Name: toolsVolume, MountPath: toolsMountDir}},
	}
}

// changesScript prints "A\tPATH" for each path not in the image's list,
// "D\tPATH" for each path of the list that is gone, and "M\tPATH" for each
// file of the list whose change time (which nobody can set back) is not
// older than $1, the pod's creation in Unix seconds; then "ok". It runs
// under the trusted BusyBox only (PATH is the tools').
func changesScript(state bool) string {
	return `t0=$1
mins=$(( ($(date +%s) - t0) / 60 + 2 ))
{
	find / -xdev ` + pruned(state) + ` -print | sed 's/^/N /'
	find / -xdev ` + pruned(state) + ` ! -type d -cmin -$mins -print | while IFS= read -r p; do
		c=$(stat -c %Z "$p" 2>/dev/null) && [ "$c" -ge "$t0" ] && printf 'C %s\n' "$p"
	done
} | awk -v skip="` + strings.Join(kubeletFiles, " ") + `" '
BEGIN { n = split(skip, s, " "); for (i = 1; i <= n; i++) kubelet[s[i]] = 1 }
FILENAME != "-" { img[$0] = 1; next }
{ k = substr($0, 1, 1); p = substr($0, 3) }
p in kubelet { next }
k == "N" { now[p] = 1; if (!(p in img)) printf "A\t%s\n", p; next }
k == "C" && (p in img) { printf "M\t%s\n", p }
END { for (p in img) if (!(p in now) && !(p in kubelet)) printf "D\t%s\n", p; print "ok" }' ` + sandbox.ToolsDir + "/" + imageListName + ` -`
}

// Changes lists what sandbox id's running pod changed in its file system
// compared with its image: added and deleted paths, and files changed since
// the pod was made (modified). The kept directories of a sandbox with kept
// state are left out: they are the claim's, not the image's. A pod without
// the tools (or made before the driver listed images) answers
// ErrUnsupported, as does a stopped sandbox, which has no file system.
func (r *Runtime) Changes(ctx context.Context, id string) ([]sandbox.Change, error) {
	cm, err := r.record(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := r.pod(ctx, id)
	if err != nil {
		return nil, err
	}
	if p == nil || p.Status.Phase != corev1.PodRunning || !hasIndex(p) {
		return nil, fmt.Errorf("%w: sandbox %s has no running pod with the list of its image's files", sandbox.ErrUnsupported, id)
	}
	t0 := strconv.FormatInt(p.CreationTimestamp.Unix(), 10)
	var out, errOut bytes.Buffer
	cmd := []string{busybox, "env", "-i", "PATH=" + sandbox.ToolsDir + "/bin", "LC_ALL=C", busybox, "sh", "-c", changesScript(keepsState(cm)), "changes", t0}
	code, err := r.Run(ctx, id, sandbox.ExecSpec{User: "root", Cmd: cmd}, nil, &out, &errOut)
	if err != nil {
		return nil, err
	}
	changes, complete := parseChanges(out.String())
	if code != 0 || !complete {
		return nil, fmt.Errorf("listing the changes of sandbox %s: exit %d: %s", id, code, strings.TrimSpace(errOut.String()))
	}
	return changes, nil
}

// parseChanges reads changesScript's output; complete reports its "ok".
func parseChanges(out string) (changes []sandbox.Change, complete bool) {
	kinds := map[string]sandbox.ChangeKind{"A": sandbox.ChangeAdded, "D": sandbox.ChangeDeleted, "M": sandbox.ChangeModified}
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if line == "ok" {
			complete = true
			continue
		}
		k, path, ok := strings.Cut(line, "\t")
		if kind, known := kinds[k]; ok && known {
			changes = append(changes, sandbox.Change{Path: path, Kind: kind})
		}
	}
	return changes, complete
}

// hasIndex reports whether pod p lists its image's files.
func hasIndex(p *corev1.Pod) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == "index" {
			return true
		}
	}
	return false
}
