package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/sandbox"
)

// ContractOptions are what RunContract needs from the engine under test.
type ContractOptions struct {
	// Image is a sandbox image with a POSIX /bin/sh, cat, stty and sleep
	// (tuxlab/sandbox-busybox:latest).
	Image string
	// ToolsImage is the image of trusted tools (sandbox.DefaultToolsImage);
	// "" for a driver without a tools volume (machines), whose ToolsVolume
	// must then answer sandbox.ErrUnsupported.
	ToolsImage string
	// NoChanges: the driver cannot list changed files (machines): Changes
	// of an existing sandbox must answer sandbox.ErrUnsupported.
	NoChanges bool
	// NoNetworks: the driver has no shared networks (machines, for now):
	// EnsureNetwork must answer sandbox.ErrUnsupported and RemoveNetwork nil.
	NoNetworks bool
	// MemoryBytes is each sandbox's memory (0: 64 MiB; a machine needs more).
	MemoryBytes int64
	// DiskMB is the disk bound the DiskQuota part asks for (0: 64 MiB; a
	// machine's is at least its image's size).
	DiskMB int
	// Timeout bounds each step, the boot a first exec waits for included
	// (0: 2 minutes).
	Timeout time.Duration
	// StopDiscards: a stopped sandbox keeps nothing it wrote (Kubernetes,
	// where Stop deletes the pod): after Stop and Start, a file written
	// before must be gone instead of kept.
	StopDiscards bool
}

// RunContract checks that the runtime newRuntime returns keeps the contract
// of sandbox.Runtime's documentation, on a real engine. Everything it makes
// carries the labels org.tuxlab.managed=contract and a random
// org.tuxlab.instance, and is removed when the test ends, whatever happens.
func RunContract(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime, opts ContractOptions) {
	rt := newRuntime(t)
	if rt == nil {
		return // newRuntime skipped or failed the test
	}
	c := &contract{rt: rt, opts: opts, id: randomID()}
	c.labels = map[string]string{sandbox.LabelManaged: "contract", sandbox.LabelInstance: c.id}
	c.network = "tuxlab-contract-" + c.id
	t.Cleanup(c.cleanUp)

	t.Run("Ping", c.ping)
	t.Run("ImageExists", c.imageExists)
	t.Run("ToolsVolume", c.toolsVolume)
	t.Run("MissingContainerIsGone", c.missingContainer)
	t.Run("Lifecycle", c.lifecycle)
	t.Run("Network", c.networks)
	t.Run("DiskQuota", c.diskQuota)
}

type contract struct {
	rt      sandbox.Runtime
	opts    ContractOptions
	id      string
	labels  map[string]string
	network string
	tools   string
}

func randomID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (c *contract) ctxFor(t *testing.T) context.Context {
	d := c.opts.Timeout
	if d == 0 {
		d = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// cleanUp removes every container and the network the suite made.
func (c *contract) cleanUp() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, _ := c.rt.List(ctx, c.labels)
	for _, in := range list {
		c.rt.Remove(ctx, in.EngineID)
	}
	c.rt.RemoveNetwork(ctx, c.network)
}

// spec is a container of the suite: a shell that waits, ended by SIGTERM.
func (c *contract) spec(t *testing.T) sandbox.Spec {
	mem := c.opts.MemoryBytes
	if mem == 0 {
		mem = 64 << 20
	}
	return sandbox.Spec{
		Name: "tuxlab-contract-" + c.id + "-" + randomID(), Image: c.opts.Image, Hostname: "contract", User: "0",
		Cmd:    []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
		Labels: c.labels, MemoryBytes: mem, NanoCPUs: 500_000_000, PidsLimit: 64, Network: "none",
		ToolsVolume: c.toolsOf(t),
	}
}

// toolsOf returns the tools volume ("" for a driver without one).
func (c *contract) toolsOf(t *testing.T) string {
	if c.tools == "" && c.opts.ToolsImage != "" {
		v, err := c.rt.ToolsVolume(c.ctxFor(t), c.opts.ToolsImage)
		if err != nil {
			t.Fatalf("ToolsVolume(%s): %v", c.opts.ToolsImage, err)
		}
		c.tools = v
	}
	return c.tools
}

// create makes and starts a container of spec s.
func (c *contract) create(t *testing.T, s sandbox.Spec) string {
	t.Helper()
	ctx := c.ctxFor(t)
	id, err := c.rt.Create(ctx, s)
	if err != nil || id == "" {
		t.Fatalf("Create: %q %v", id, err)
	}
	if err := c.rt.Start(ctx, id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return id
}

// run runs script in container id and returns its output and code.
func (c *contract) run(t *testing.T, id string, s sandbox.ExecSpec, stdin io.Reader) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := c.rt.Run(c.ctxFor(t), id, s, stdin, &out, &errOut)
	if err != nil {
		t.Fatalf("Run(%q): %v", s.Cmd, err)
	}
	return out.String(), errOut.String(), code
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func (c *contract) ping(t *testing.T) {
	if err := c.rt.Ping(c.ctxFor(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func (c *contract) imageExists(t *testing.T) {
	ctx := c.ctxFor(t)
	if ok, err := c.rt.ImageExists(ctx, c.opts.Image); !ok || err != nil {
		t.Errorf("ImageExists(%s) = %v, %v; want true", c.opts.Image, ok, err)
	}
	if ok, err := c.rt.ImageExists(ctx, "tuxlab/no-such-image:"+c.id); ok || err != nil {
		t.Errorf("ImageExists(missing) = %v, %v; want false, nil", ok, err)
	}
}

func (c *contract) toolsVolume(t *testing.T) {
	ctx := c.ctxFor(t)
	if c.opts.ToolsImage == "" {
		if _, err := c.rt.ToolsVolume(ctx, c.opts.Image); !errors.Is(err, sandbox.ErrUnsupported) {
			t.Errorf("ToolsVolume of a driver without one = %v; want ErrUnsupported", err)
		}
		return
	}
	first := c.toolsOf(t)
	again, err := c.rt.ToolsVolume(ctx, c.opts.ToolsImage)
	if err != nil || again != first {
		t.Errorf("ToolsVolume again = %q, %v; want %q", again, err, first)
	}
	if _, err := c.rt.ToolsVolume(ctx, "tuxlab/no-such-image:"+c.id); !errors.Is(err, sandbox.ErrToolsMissing) {
		t.Errorf("ToolsVolume(missing image) = %v; want ErrToolsMissing", err)
	}
}

func (c *contract) missingContainer(t *testing.T) {
	ctx := c.ctxFor(t)
	missing := "tuxlab-contract-missing-" + c.id
	calls := map[string]func() error{
		"Start":   func() error { return c.rt.Start(ctx, missing) },
		"Stop":    func() error { return c.rt.Stop(ctx, missing, time.Second) },
		"Remove":  func() error { return c.rt.Remove(ctx, missing) },
		"Inspect": func() error { _, err := c.rt.Inspect(ctx, missing); return err },
		"Changes": func() error { _, err := c.rt.Changes(ctx, missing); return err },
		"Exec": func() error {
			s, err := c.rt.Exec(ctx, missing, sandbox.ExecSpec{Cmd: sh("true")})
			if err == nil {
				s.Close()
			}
			return err
		},
		"Run": func() error {
			_, err := c.rt.Run(ctx, missing, sandbox.ExecSpec{Cmd: sh("true")}, nil, io.Discard, io.Discard)
			return err
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, sandbox.ErrGone) {
			t.Errorf("%s on a missing container = %v; want ErrGone", name, err)
		}
	}
	if usage, err := c.rt.DiskUsage(ctx, []string{missing}); err != nil || len(usage) != 0 {
		t.Errorf("DiskUsage of a missing container = %v, %v; want it left out", usage, err)
	}
}

// listed returns container id's instance in List(labels), if there.
func (c *contract) listed(t *testing.T, id string) (sandbox.Instance, bool) {
	t.Helper()
	list, err := c.rt.List(c.ctxFor(t), c.labels)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, in := range list {
		if in.EngineID == id {
			return in, true
		}
	}
	return sandbox.Instance{}, false
}

func (c *contract) lifecycle(t *testing.T) {
	ctx := c.ctxFor(t)
	id, err := c.rt.Create(ctx, c.spec(t))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	st, err := c.rt.Inspect(ctx, id)
	if err != nil || st.Running || st.Created.IsZero() {
		t.Fatalf("Inspect after Create = %+v, %v; want created, not running", st, err)
	}
	if in, ok := c.listed(t, id); !ok || in.State.Running || in.Labels[sandbox.LabelInstance] != c.id {
		t.Fatalf("List after Create = %+v, %v", in, ok)
	}
	if list, err := c.rt.List(ctx, map[string]string{sandbox.LabelInstance: "other-" + c.id}); err != nil || len(list) != 0 {
		t.Errorf("List by a label nothing has = %v, %v; want empty", list, err)
	}
	for range 2 { // starting a running container changes nothing
		if err := c.rt.Start(ctx, id); err != nil {
			t.Fatalf("Start: %v", err)
		}
	}
	if st, err := c.rt.Inspect(ctx, id); err != nil || !st.Running || st.StartedAt.IsZero() {
		t.Fatalf("Inspect after Start = %+v, %v", st, err)
	}
	if in, ok := c.listed(t, id); !ok || !in.State.Running {
		t.Fatalf("List after Start = %+v, %v", in, ok)
	}
	if changes, err := c.rt.Changes(ctx, id); c.opts.NoChanges {
		if !errors.Is(err, sandbox.ErrUnsupported) {
			t.Errorf("Changes of a driver without them = %v; want ErrUnsupported", err)
		}
	} else if err != nil || slices.ContainsFunc(changes, addedToSystem) {
		t.Errorf("Changes of a container nothing ran in = %+v, %v; want nothing added to a system directory", changes, err)
	}

	t.Run("Run", func(t *testing.T) { c.runs(t, id) })
	t.Run("ExecWithoutTTY", func(t *testing.T) { c.execPlain(t, id) })
	t.Run("ExecWithTTY", func(t *testing.T) { c.execTTY(t, id) })
	if !c.opts.NoChanges {
		t.Run("Changes", func(t *testing.T) { c.changes(t, id) })
	}
	t.Run("DiskUsage", func(t *testing.T) { c.diskUsage(t, id) })

	for range 2 { // stopping a stopped container changes nothing
		if err := c.rt.Stop(ctx, id, 5*time.Second); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	if st, err := c.rt.Inspect(ctx, id); err != nil || st.Running || st.FinishedAt.IsZero() {
		t.Fatalf("Inspect after Stop = %+v, %v", st, err)
	}
	if _, err := c.rt.Run(ctx, id, sandbox.ExecSpec{Cmd: sh("true")}, nil, io.Discard, io.Discard); err == nil || errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Run in a stopped container = %v; want the engine's refusal, not ErrGone", err)
	}
	if err := c.rt.Start(ctx, id); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	out, _, _ := c.run(t, id, sandbox.ExecSpec{Cmd: sh("cat /contract-file 2>/dev/null || echo none")}, nil)
	switch {
	case c.opts.StopDiscards && out != "none\n":
		t.Errorf("a stopped and started sandbox of a driver that discards kept %q", out)
	case !c.opts.StopDiscards && out != "kept\n":
		t.Errorf("a stopped and started container lost what it wrote: %q", out)
	}
	if err := c.rt.Remove(ctx, id); err != nil { // running: removed all the same
		t.Fatalf("Remove: %v", err)
	}
	if _, err := c.rt.Inspect(ctx, id); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Inspect after Remove = %v; want ErrGone", err)
	}
	if err := c.rt.Remove(ctx, id); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Remove again = %v; want ErrGone", err)
	}
	if in, ok := c.listed(t, id); ok {
		t.Errorf("List after Remove still has %+v", in)
	}
}

func (c *contract) runs(t *testing.T, id string) {
	out, errOut, code := c.run(t, id, sandbox.ExecSpec{Cmd: sh("cat; echo err >&2; exit 3")}, strings.NewReader("from stdin\n"))
	if out != "from stdin\n" || errOut != "err\n" || code != 3 {
		t.Errorf("Run with stdin = %q, %q, %d; want stdin on stdout, err on stderr, 3", out, errOut, code)
	}
	out, _, code = c.run(t, id, sandbox.ExecSpec{Cmd: sh(`echo "$FOO"; pwd; id -u; cat`), Env: []string{"FOO=bar"}, Dir: "/tmp", User: "65534"}, nil)
	if out != "bar\n/tmp\n65534\n" || code != 0 {
		t.Errorf("Run with env, dir, user and no stdin = %q, %d", out, code)
	}
	if out, _, code := c.run(t, id, sandbox.ExecSpec{Cmd: sh("echo kept > /contract-file")}, nil); out != "" || code != 0 {
		t.Errorf("writing a file as root = %q, %d", out, code)
	}
	if c.tools != "" {
		out, _, _ = c.run(t, id, sandbox.ExecSpec{Cmd: sh(sandbox.ToolsDir + "/bin/busybox true && echo tools")}, nil)
		if out != "tools\n" {
			t.Errorf("the tools volume is not mounted at %s: %q", sandbox.ToolsDir, out)
		}
	}
	if _, _, code := c.run(t, id, sandbox.ExecSpec{Cmd: []string{"/no/such/program"}}, nil); code != 126 && code != 127 {
		t.Errorf("Run of a missing program = code %d; want 126 or 127", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	code, err := c.rt.Run(ctx, id, sandbox.ExecSpec{Cmd: sh("sleep 30")}, nil, io.Discard, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) || code != -1 {
		t.Errorf("Run past its context = %d, %v; want -1 and the context's error", code, err)
	}
}

func (c *contract) execPlain(t *testing.T, id string) {
	ctx := c.ctxFor(t)
	s, err := c.rt.Exec(ctx, id, sandbox.ExecSpec{Cmd: sh("read l; echo got $l; echo err >&2; exit 4")})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("line\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out, _ := io.ReadAll(s)
	// stdout and stderr are two pipes: their order is not kept.
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	slices.Sort(lines)
	if !slices.Equal(lines, []string{"err", "got line"}) {
		t.Errorf("Exec without a TTY read %q; want the command's stdout and stderr bytes", out)
	}
	if code, err := s.Wait(ctx); code != 4 || err != nil {
		t.Errorf("Wait = %d, %v; want 4", code, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

func (c *contract) execTTY(t *testing.T, id string) {
	ctx := c.ctxFor(t)
	s, err := c.rt.Exec(ctx, id, sandbox.ExecSpec{Cmd: []string{"/bin/sh"}, TTY: true, Cols: 80, Rows: 24, Env: []string{"TERM=dumb"}})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	defer s.Close()
	if err := s.Resize(ctx, 101, 33); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if _, err := s.Write([]byte("stty size; exit 5\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out, _ := io.ReadAll(s)
	if !strings.Contains(string(out), "33 101") {
		t.Errorf("the terminal after Resize(101, 33) reads %q", out)
	}
	if code, err := s.Wait(ctx); code != 5 || err != nil {
		t.Errorf("Wait = %d, %v; want 5", code, err)
	}
}

func (c *contract) changes(t *testing.T, id string) {
	c.run(t, id, sandbox.ExecSpec{Cmd: sh("echo x > /contract-added")}, nil)
	changes, err := c.rt.Changes(c.ctxFor(t), id)
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if !slices.Contains(changes, sandbox.Change{Path: "/contract-added", Kind: sandbox.ChangeAdded}) {
		t.Errorf("Changes = %+v; want /contract-added added", changes)
	}
}

func (c *contract) diskUsage(t *testing.T, id string) {
	c.run(t, id, sandbox.ExecSpec{Cmd: sh("head -c 2097152 /dev/urandom > /contract-blob")}, nil)
	missing := "tuxlab-contract-missing-" + c.id
	usage, err := c.rt.DiskUsage(c.ctxFor(t), []string{id, missing})
	if err != nil {
		t.Fatalf("DiskUsage: %v", err)
	}
	if usage[id] < 2<<20 {
		t.Errorf("DiskUsage = %d bytes after writing 2 MiB", usage[id])
	}
	if _, ok := usage[missing]; ok {
		t.Errorf("DiskUsage answered for a missing container: %v", usage)
	}
}

func (c *contract) networks(t *testing.T) {
	ctx := c.ctxFor(t)
	if c.opts.NoNetworks {
		if err := c.rt.EnsureNetwork(ctx, c.network, c.labels); !errors.Is(err, sandbox.ErrUnsupported) {
			t.Errorf("EnsureNetwork of a driver without networks = %v; want ErrUnsupported", err)
		}
		if err := c.rt.RemoveNetwork(ctx, c.network); err != nil {
			t.Errorf("RemoveNetwork of a driver without networks = %v; want nil", err)
		}
		return
	}
	for range 2 { // a second call finds it there
		if err := c.rt.EnsureNetwork(ctx, c.network, c.labels); err != nil {
			t.Fatalf("EnsureNetwork: %v", err)
		}
	}
	s := c.spec(t)
	s.Network = c.network
	s.CapAdd = []string{"NET_RAW"} // for ping
	a, b := c.create(t, s), c.create(t, func() sandbox.Spec { s.Name += "-b"; return s }())
	addr, _, _ := c.run(t, b, sandbox.ExecSpec{Cmd: sh("hostname -i")}, nil)
	if _, _, code := c.run(t, a, sandbox.ExecSpec{Cmd: sh("ping -c 1 -W 5 " + strings.TrimSpace(addr))}, nil); code != 0 {
		t.Errorf("two containers on one network do not reach each other (%s)", addr)
	}
	if err := c.rt.RemoveNetwork(ctx, c.network); err != nil {
		t.Errorf("RemoveNetwork in use = %v; want nil (left alone)", err)
	}
	for _, id := range []string{a, b} {
		if err := c.rt.Remove(ctx, id); err != nil {
			t.Fatalf("Remove: %v", err)
		}
	}
	for range 2 { // gone the second time
		if err := c.rt.RemoveNetwork(ctx, c.network); err != nil {
			t.Errorf("RemoveNetwork = %v", err)
		}
	}
	s.Name += "-c"
	id, err := c.rt.Create(ctx, s)
	if err == nil {
		err = c.rt.Start(ctx, id)
	}
	if !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Create and Start on a missing network = %q, %v; want ErrGone", id, err)
	}
}

func (c *contract) diskQuota(t *testing.T) {
	ctx := c.ctxFor(t)
	err := c.rt.ProbeDiskQuota(ctx, c.opts.Image)
	if err != nil && !errors.Is(err, sandbox.ErrNoDiskQuota) {
		t.Fatalf("ProbeDiskQuota = %v; want nil or ErrNoDiskQuota", err)
	}
	s := c.spec(t)
	s.DiskMB = 64
	if c.opts.DiskMB != 0 {
		s.DiskMB = c.opts.DiskMB
	}
	id, cerr := c.rt.Create(ctx, s)
	switch {
	case err == nil && cerr != nil:
		t.Errorf("the engine has quotas but Create with DiskMB failed: %v", cerr)
	case err != nil && !errors.Is(cerr, sandbox.ErrNoDiskQuota):
		t.Errorf("the engine has no quotas but Create with DiskMB = %q, %v; want ErrNoDiskQuota", id, cerr)
	}
	if cerr == nil {
		c.rt.Remove(ctx, id)
	}
}

// addedToSystem reports whether ch adds a path in a directory of system
// programs or libraries, which would make a fresh sandbox look tampered with.
func addedToSystem(ch sandbox.Change) bool {
	if ch.Kind != sandbox.ChangeAdded {
		return false
	}
	for _, d := range []string{"/bin/", "/sbin/", "/lib/", "/usr/bin/", "/usr/sbin/", "/usr/lib/"} {
		if strings.HasPrefix(ch.Path, d) {
			return true
		}
	}
	return false
}
