package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"tuxlab/internal/sandbox"
)

// LabelTools marks the tools volumes and the containers that fill them; its
// value on a volume is the id of the image the volume was filled from.
const LabelTools = "org.tuxlab.tools"

// toolsMount is how a sandbox sees the tools volume: read-only at
// sandbox.ToolsDir, never filled from the sandbox's own image.
func toolsMount(volume string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: volume, Target: sandbox.ToolsDir, ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
}

// fillTools publishes the tools image's /tuxlab/bin as the volume's bin
// directory in one rename, so that a sandbox never sees half of it and
// concurrent fillers (several tuxlab processes starting at once) cannot
// overwrite a program another sandbox is running: the first rename wins, the
// others find bin there and leave. $1 is a random name for the staging copy.
const fillTools = `d=` + sandbox.ToolsDir + `
[ -d "$d/bin" ] && exit 0
s="$d/.stage-$1"
rm -rf "$s"
mkdir "$s" && cp -a /tuxlab/bin "$s/bin" || exit 1
mv -T "$s/bin" "$d/bin" 2>/dev/null
rm -rf "$s"
[ -x "$d/bin/bash" ] && [ -x "$d/bin/busybox" ]`

// ToolsVolume returns the volume tuxlab-tools-<short image id>, filled from
// the image's /tuxlab by a one-off container the first time. The volume lives
// on the engine, so this works on a remote engine too (no host path).
func (r *Runtime) ToolsVolume(ctx context.Context, image string) (string, error) {
	img, err := r.c.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%w: %s", sandbox.ErrToolsMissing, image)
	}
	if err != nil {
		return "", wrap(err)
	}
	id := strings.TrimPrefix(img.ID, "sha256:")
	name := "tuxlab-tools-" + id[:min(12, len(id))]
	if _, err := r.c.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{LabelTools: img.ID}}); err != nil {
		return "", wrap(err)
	}
	if err := r.runFiller(ctx, image, name); err != nil {
		return "", fmt.Errorf("fill the tools volume %s from %s: %w", name, image, err)
	}
	return name, nil
}

// runFiller runs fillTools in a container of the tools image with the volume
// mounted writable, waits for it and removes it.
func (r *Runtime) runFiller(ctx context.Context, image, volume string) error {
	b := make([]byte, 6)
	rand.Read(b)
	stage := hex.EncodeToString(b)
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, User: "0", Labels: map[string]string{LabelTools: "filler"},
			Cmd: []string{"/tuxlab/bin/busybox", "sh", "-c", fillTools, "fill", stage}},
		HostConfig: &container.HostConfig{NetworkMode: "none", CapDrop: []string{"ALL"}, LogConfig: container.LogConfig{Type: "none"},
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: volume, Target: sandbox.ToolsDir}}},
	})
	if err != nil {
		return wrap(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		r.c.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := r.c.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return wrap(err)
	}
	wait := r.c.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case err := <-wait.Error:
		return wrap(err)
	case done := <-wait.Result:
		if done.StatusCode != 0 {
			return fmt.Errorf("the filling container exited with status %d", done.StatusCode)
		}
		return nil
	}
}

// engineInit is where the engine bind-mounts its init (Create sets Init):
// the mount point shows as a path added to the container's layer, which
// nothing in the container made.
var engineInit = map[string]bool{"/sbin/docker-init": true, "/usr/sbin/docker-init": true}

// Changes lists what differs in a container's file system from its image,
// without the mount point of the engine's init. The engine walks only the
// container's writable layer.
func (r *Runtime) Changes(ctx context.Context, id string) ([]sandbox.Change, error) {
	res, err := r.c.ContainerDiff(ctx, id, client.ContainerDiffOptions{})
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]sandbox.Change, 0, len(res.Changes))
	for _, c := range res.Changes {
		kind := sandbox.ChangeModified
		switch c.Kind {
		case container.ChangeAdd:
			kind = sandbox.ChangeAdded
			if engineInit[c.Path] {
				continue
			}
		case container.ChangeDelete:
			kind = sandbox.ChangeDeleted
		}
		out = append(out, sandbox.Change{Path: c.Path, Kind: kind})
	}
	return out, nil
}
