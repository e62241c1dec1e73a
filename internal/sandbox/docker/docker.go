// Package docker is the sandbox runtime on the Docker Engine API (and
// Podman's compatible API), through the engine's official Go client: it
// negotiates the API version (Debian's docker.io speaks 1.41), frames exec
// streams, and is maintained by the engine's authors, so tuxlab does not
// re-implement a protocol with hijacked connections and multiplexed streams.
package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"tuxlab/internal/sandbox"
)

// Runtime implements sandbox.Runtime on a Docker engine.
type Runtime struct {
	c     *client.Client
	meter meter // measures sandboxes' disk use (meter.go)
	// lxcfs, when set, is bound into every new container (lxcfs.go).
	lxcfs *lxcfs
	// ncpu is the engine's CPU count, asked once; nextCPU is the first CPU
	// of the next cpuset (lxcfs.go: cpuset).
	ncpu    atomic.Int64
	nextCPU atomic.Uint64
}

var _ sandbox.Runtime = (*Runtime)(nil)

// New returns a runtime for the engine at host ("" for DOCKER_HOST or the
// default socket). It does not contact the engine: a missing engine shows up
// as sandbox.ErrRuntimeUnavailable on each call.
func New(host string) (*Runtime, error) {
	// The client negotiates the API version with the engine by default.
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &Runtime{c: c}, nil
}

// Close releases the client's connections.
func (r *Runtime) Close() error { return r.c.Close() }

// wrap maps engine errors onto the sandbox domain's.
func wrap(err error) error {
	var netErr net.Error
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: %w", sandbox.ErrGone, err)
	case client.IsErrConnectionFailed(err), errors.As(err, &netErr):
		return fmt.Errorf("%w: %w", sandbox.ErrRuntimeUnavailable, err)
	}
	return err
}

// Ping checks that the engine answers.
func (r *Runtime) Ping(ctx context.Context) error {
	_, err := r.c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	return wrap(err)
}

// ImageExists reports whether the image is present on the engine.
func (r *Runtime) ImageExists(ctx context.Context, image string) (bool, error) {
	_, err := r.c.ImageInspect(ctx, image)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, wrap(err)
}

// networkPool is where sandbox networks take their /28 subnets: 4096 small
// networks, where the engine's default pools hold a few dozen /16 and /20
// networks and would run out with one network per learner.
var networkPool = netip.MustParsePrefix("10.213.0.0/16")

// Sandbox networks are internal bridges whose host side has no address
// (inhibit_ipv4, Docker 20.10 and later). The engine still gives each sandbox
// a default route to the network's gateway address, but nothing on the host
// holds that address, so nothing on the host answers a sandbox, at the
// gateway or at any other of its addresses (before, a service bound to the
// host's 0.0.0.0 answered learners there). A learner's sandboxes on one
// network still reach each other over the bridge. Containers on networks
// without IPv6 have IPv6 turned off, so no link-local address reaches the
// host either. The bridge interface is named tlsb-<hash> so that firewall
// rules can name every sandbox bridge (scripts/ensure-engine.sh adds them).
const (
	optInhibitIPv4 = "com.docker.network.bridge.inhibit_ipv4"
	optBridgeName  = "com.docker.network.bridge.name"
)

// BridgePrefix starts the name of every sandbox network's bridge interface.
const BridgePrefix = "tlsb-"

// bridgeName is network's bridge interface: unique per network name (so per
// install and learner), within the kernel's 15 characters.
func bridgeName(network string) string {
	sum := sha256.Sum256([]byte(network))
	return BridgePrefix + hex.EncodeToString(sum[:5])
}

// EnsureNetwork creates an internal bridge network (no route out of the host,
// no address of the host on it) with a free /28 of networkPool, unless it
// exists. One made before the host lost its address there is made again when
// nothing uses it.
func (r *Runtime) EnsureNetwork(ctx context.Context, name string, labels map[string]string) error {
	if res, err := r.c.NetworkInspect(ctx, name, client.NetworkInspectOptions{}); err == nil {
		if res.Network.Options[optInhibitIPv4] == "true" {
			return nil
		}
		if _, err := r.c.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil {
			return nil // still in use: it goes with its last sandbox
		}
	}
	list, err := r.c.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return wrap(err)
	}
	used := map[netip.Prefix]bool{}
	for _, n := range list.Items {
		for _, c := range n.IPAM.Config {
			used[c.Subnet.Masked()] = true
		}
	}
	base := networkPool.Addr().As4()
	tries := 0
	for i := 0; i < 1<<(28-networkPool.Bits()) && tries < 16; i++ {
		b := base
		b[2], b[3] = byte(i>>4), byte(i<<4)
		subnet := netip.PrefixFrom(netip.AddrFrom4(b), 28)
		if used[subnet] {
			continue
		}
		tries++
		_, err := r.c.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver: "bridge", Internal: true, Labels: labels,
			Options: map[string]string{optInhibitIPv4: "true", optBridgeName: bridgeName(name)},
			IPAM:    &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet}}},
		})
		switch {
		case err == nil, cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err):
			return nil
		case strings.Contains(err.Error(), "overlap"):
			continue // taken meanwhile by another network
		}
		return wrap(err)
	}
	return fmt.Errorf("no free /28 left in %s for sandbox network %s: remove unused networks (docker network prune)", networkPool, name)
}

// RemoveNetwork removes a network; one still in use, or gone, is left alone.
func (r *Runtime) RemoveNetwork(ctx context.Context, name string) error {
	_, err := r.c.NetworkRemove(ctx, name, client.NetworkRemoveOptions{})
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) || cerrdefs.IsPermissionDenied(err) {
		return nil
	}
	return wrap(err)
}

// Create makes a container from s, hardened: no privileges, every capability
// dropped but s.CapAdd, no-new-privileges when asked, no mount but the
// read-only tools volume and the read-only LXCFS files (and so no engine
// socket), the engine's default seccomp profile, and resource limits; a
// limit of whole CPUs gets as many CPUs of its own (cpuset), so nproc says
// it.
func (r *Runtime) Create(ctx context.Context, s sandbox.Spec) (string, error) {
	init := true
	security := []string{}
	if s.NoNewPrivileges {
		security = append(security, "no-new-privileges:true")
	}
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(s.Network),
		Privileged:  false,
		CapDrop:     []string{"ALL"},
		CapAdd:      s.CapAdd,
		SecurityOpt: security,
		Init:        &init,
		Runtime:     s.Runtime,
		// Nothing a sandbox prints reaches the engine's log files: writing to
		// /proc/1/fd/1 must not fill the host's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     s.MemoryBytes,
			MemorySwap: s.MemoryBytes, // no swap beyond the memory limit
			NanoCPUs:   s.NanoCPUs,
			CpusetCpus: r.cpuset(ctx, s.NanoCPUs),
			PidsLimit:  &s.PidsLimit,
		},
	}
	if s.ToolsVolume != "" {
		host.Mounts = []mount.Mount{toolsMount(s.ToolsVolume)}
	}
	host.Mounts = append(host.Mounts, r.lxcfs.mounts()...)
	if s.DiskMB > 0 {
		host.StorageOpt = map[string]string{"size": fmt.Sprintf("%dM", s.DiskMB)}
	}
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: s.Name,
		Config: &container.Config{
			Image: s.Image, Hostname: s.Hostname, User: s.User, Cmd: s.Cmd, Env: s.Env, Labels: s.Labels,
			StopSignal: s.StopSignal,
		},
		HostConfig: host,
	})
	if err != nil {
		if s.DiskMB > 0 && isStorageOptError(err) {
			return "", fmt.Errorf("%w: %w", sandbox.ErrNoDiskQuota, err)
		}
		if s.Runtime != "" && isUnknownRuntimeError(err) {
			return "", fmt.Errorf("%w: %w", sandbox.ErrNoEngineRuntime, err)
		}
		return "", wrap(err)
	}
	if err := r.writeMachineID(ctx, res.ID); err != nil {
		r.c.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
		return "", err
	}
	return res.ID, nil
}

// writeMachineID gives a new container a machine id of its own, as a new
// machine gets at its first boot. Images ship an empty /etc/machine-id (every
// container is its own machine), and systemd's tools name the machine from
// it: journald, started by hand as lesson 07/05 shows, cannot reopen the
// journal a container keeps in /run over a restart without one ("No medium
// found"), so a restarted sandbox logged nothing. Written into the writable
// layer before the first start, it stays the same over stops and starts.
func (r *Runtime) writeMachineID(ctx context.Context, id string) error {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // a random (version 4) id, as systemd makes them
	content := hex.EncodeToString(b) + "\n"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "etc/machine-id", Typeflag: tar.TypeReg, Mode: 0o444, Size: int64(len(content)), ModTime: time.Now()})
	tw.Write([]byte(content))
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := r.c.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf})
	if err != nil {
		return fmt.Errorf("writing the sandbox's /etc/machine-id: %w", wrap(err))
	}
	return nil
}

// isStorageOptError recognises the engine's refusal of a size limit on a
// storage driver without quotas ("--storage-opt is supported only for ...").
func isStorageOptError(err error) bool {
	return strings.Contains(err.Error(), "storage-opt") || strings.Contains(err.Error(), "storage opt")
}

// isUnknownRuntimeError reports whether the engine refused a container for a
// runtime it does not have: "Unknown runtime specified runsc" (20.10), or
// "unknown or invalid runtime name: runsc" (later engines).
func isUnknownRuntimeError(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown runtime") || strings.Contains(msg, "invalid runtime")
}

// WaitReady: a started container runs commands at once.
func (r *Runtime) WaitReady(ctx context.Context, engineID string) error { return ctx.Err() }

// ProbeDiskQuota creates (and removes) a container with a size limit, which
// the engine refuses at once where its storage driver has no quotas.
func (r *Runtime) ProbeDiskQuota(ctx context.Context, image string) error {
	res, err := r.c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: []string{"true"}, Labels: map[string]string{sandbox.LabelManaged: "probe"}},
		HostConfig: &container.HostConfig{NetworkMode: "none", StorageOpt: map[string]string{"size": "64M"}},
	})
	if err != nil {
		if isStorageOptError(err) {
			return fmt.Errorf("%w: %w", sandbox.ErrNoDiskQuota, err)
		}
		return wrap(err)
	}
	_, err = r.c.ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true})
	return wrap(err)
}

// Start starts a created or stopped container.
func (r *Runtime) Start(ctx context.Context, id string) error {
	_, err := r.c.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return wrap(err)
}

// Stop sends SIGTERM and, after grace, SIGKILL.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int(grace.Seconds())
	_, err := r.c.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &secs})
	return wrap(err)
}

// Remove deletes a container, running or not, with its anonymous volumes.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	_, err := r.c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	return wrap(err)
}

// Inspect returns a container's state.
func (r *Runtime) Inspect(ctx context.Context, id string) (sandbox.State, error) {
	res, err := r.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return sandbox.State{}, wrap(err)
	}
	st := stateOf(res.Container.State)
	if created, err := time.Parse(time.RFC3339Nano, res.Container.Created); err == nil {
		st.Created = created.UTC()
	}
	return st, nil
}

func stateOf(st *container.State) sandbox.State {
	if st == nil {
		return sandbox.State{}
	}
	parse := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || t.Year() < 2000 {
			return time.Time{}
		}
		return t.UTC()
	}
	return sandbox.State{Running: st.Running, Status: string(st.Status), StartedAt: parse(st.StartedAt),
		FinishedAt: parse(st.FinishedAt), ExitCode: st.ExitCode, OOMKilled: st.OOMKilled}
}

// List returns the containers carrying all the labels given, running or not.
func (r *Runtime) List(ctx context.Context, labels map[string]string) ([]sandbox.Instance, error) {
	f := client.Filters{}
	for k, v := range labels {
		f = f.Add("label", k+"="+v)
	}
	res, err := r.c.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, wrap(err)
	}
	out := make([]sandbox.Instance, 0, len(res.Items))
	for _, it := range res.Items {
		out = append(out, sandbox.Instance{EngineID: it.ID, Labels: it.Labels,
			State: sandbox.State{Running: it.State == container.StateRunning, Status: string(it.State)}})
	}
	return out, nil
}

// Exec starts a command in a running container and attaches to it.
func (r *Runtime) Exec(ctx context.Context, id string, s sandbox.ExecSpec) (sandbox.Session, error) {
	size := client.ConsoleSize{Height: s.Rows, Width: s.Cols}
	created, err := r.c.ExecCreate(ctx, id, client.ExecCreateOptions{
		User: s.User, TTY: s.TTY, ConsoleSize: size, Env: s.Env, Cmd: s.Cmd, WorkingDir: s.Dir,
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, wrap(err)
	}
	att, err := r.c.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: s.TTY, ConsoleSize: size})
	if err != nil {
		return nil, wrap(err)
	}
	sess := &session{r: r, id: created.ID, conn: att.HijackedResponse, out: att.HijackedResponse.Reader}
	if !s.TTY {
		// Without a TTY the engine frames stdout and stderr on one stream;
		// the session hands out their bytes, as the interface promises.
		pr, pw := io.Pipe()
		go func() {
			_, err := stdcopy.StdCopy(pw, pw, att.HijackedResponse.Reader)
			pw.CloseWithError(err)
		}()
		sess.out = pr
	}
	return sess, nil
}

// Run runs a command without a TTY: the engine multiplexes stdout and stderr
// on one stream, which stdcopy takes apart again.
func (r *Runtime) Run(ctx context.Context, id string, s sandbox.ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	s.TTY = false
	created, err := r.c.ExecCreate(ctx, id, client.ExecCreateOptions{
		User: s.User, Env: s.Env, Cmd: s.Cmd, WorkingDir: s.Dir,
		AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return -1, wrap(err)
	}
	att, err := r.c.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, wrap(err)
	}
	conn := att.HijackedResponse
	defer conn.Close()
	// Closing the connection is what unblocks a read when ctx ends.
	stop := context.AfterFunc(ctx, conn.Close)
	defer stop()
	if stdin != nil {
		go func() {
			io.Copy(conn.Conn, stdin)
			conn.CloseWrite() // end of input: the command reads EOF
		}()
	}
	if _, err := stdcopy.StdCopy(stdout, stderr, conn.Reader); err != nil && ctx.Err() == nil {
		return -1, wrap(err)
	}
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	return (&session{r: r, id: created.ID}).Wait(ctx)
}

// session is an attached exec. With a TTY the stream is raw terminal bytes;
// without one, out is the stream taken apart.
type session struct {
	r    *Runtime
	id   string
	conn client.HijackedResponse
	out  io.Reader
	once sync.Once
}

func (s *session) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *session) Write(p []byte) (int, error) { return s.conn.Conn.Write(p) }

// Close ends the stream; the shell sees its terminal hang up and exits.
func (s *session) Close() error {
	s.once.Do(s.conn.Close)
	return nil
}

// Resize sets the terminal size.
func (s *session) Resize(ctx context.Context, cols, rows uint) error {
	_, err := s.r.c.ExecResize(ctx, s.id, client.ExecResizeOptions{Height: rows, Width: cols})
	return wrap(err)
}

// Wait polls the exec until it has ended and returns its exit code. The
// stream's end comes first; the engine records the code just after. An exec
// is not running before it has started either (the engine starts it after
// handing over the stream): it has ended once it has had a pid, or an exit
// code without one (it failed to start).
func (s *session) Wait(ctx context.Context) (int, error) {
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 500*time.Millisecond) {
		res, err := s.r.c.ExecInspect(ctx, s.id, client.ExecInspectOptions{})
		if err != nil {
			return -1, wrap(err)
		}
		if !res.Running && (res.PID != 0 || res.ExitCode != 0) {
			return res.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(delay):
		}
	}
}
