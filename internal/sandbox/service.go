package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"tuxlab/internal/activity"
	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Options tune a Service. Zero values take the documented defaults.
type Options struct {
	MaxPerUser        int           // containers a user may have (default 3)
	MaxRunningPerUser int           // of them running at once (default 2)
	MaxRunningHost    int           // running on the whole host (default 20)
	IdleTimeout       time.Duration // a running sandbox without activity stops (default 30m)
	MaxLifetime       time.Duration // every sandbox is removed this long after creation (default 24h)
	StopGrace         time.Duration // SIGTERM to SIGKILL when stopping (default 3s)
	BootTimeout       time.Duration // how long a machine may take to boot before scripts and terminals give up (default 5m)
	Network           string        // internal engine network for templates with network (default tuxlab-sandbox)
	DiskMB            int           // writable space of sandboxes whose template sets none, MiB (default 2048; negative: unbounded)
	DiskCheckInterval time.Duration // how often writable space is measured where the engine has no quotas (default 5s)
	DiskWatchOnly     bool          // measure and remove even where the engine has quotas, and ask it for none (tests of the watch)
	PoolSize          int           // warm sandboxes kept ready per template without network (0: none)
	PoolMaxAge        time.Duration // a warm sandbox older than this is replaced (default 1h)
	ToolsImage        string        // the image of trusted tools mounted in every sandbox (default DefaultToolsImage)
	Machines          Runtime       // the machine driver (internal/sandbox/qemu); nil: machine templates answer ErrNoMachines
	NoMachines        error         // what machine templates answer when Machines is nil instead of ErrNoMachines (ErrMachinesOnKubernetes)
	MachineLimits     MachineLimits // what machine templates may ask for
	Now               func() time.Time
	Log               *slog.Logger
	Activity          activity.Log // records a creation with its row (default: none)
	Observer          Observer     // hears creation and start latencies and pool hits (default: none)
	// Lead says, before each round of Run's reconciliation and lifecycle
	// sweep, whether this process does that round: with several replicas
	// on one database only the holder of the install's lease does
	// (internal/app). Nil: always.
	Lead func(ctx context.Context) bool
}

func (o *Options) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	def(&o.MaxPerUser, 3)
	def(&o.MaxRunningPerUser, 2)
	def(&o.MaxRunningHost, 20)
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Minute
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = 24 * time.Hour
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 3 * time.Second
	}
	if o.BootTimeout <= 0 {
		o.BootTimeout = 5 * time.Minute
	}
	switch {
	case o.DiskMB == 0:
		o.DiskMB = 2048
	case o.DiskMB < 0:
		o.DiskMB = 0
	}
	if o.PoolMaxAge <= 0 {
		o.PoolMaxAge = time.Hour
	}
	if o.DiskCheckInterval <= 0 {
		o.DiskCheckInterval = 5 * time.Second
	}
	if o.ToolsImage == "" {
		o.ToolsImage = DefaultToolsImage
	}
	o.MachineLimits.defaults()
	if o.Network == "" {
		o.Network = "tuxlab-sandbox"
	}
	activity.Defaults(&o.Now, &o.Log, &o.Activity)
}

// Service is the sandbox domain.
type Service struct {
	store    Store
	runtime  Runtime
	opt      Options
	instance string       // labels this install's engine objects, so installs sharing an engine never touch each other's
	quota    atomic.Int32 // whether the engine applies disk limits itself (quotaUnknown, quotaApplied, quotaMissing)
	pool     *pool        // warm sandboxes of this process (pool.go)
	// isolation is what the check of sandbox networks found (isolation.go).
	isolation atomic.Pointer[Isolation]
	// machineNote is what an operator should hear of machines (SetMachineNote).
	machineNote atomic.Pointer[string]

	toolsMu     sync.Mutex
	toolsVolume map[Kind]string // the trusted tools of each kind, once resolved (tools)

	portsMu sync.Mutex
	ports   map[int64]int // open port connections per sandbox (port.go)
}

// DefaultToolsImage is the image of trusted tools (scripts/build-images.sh tools).
const DefaultToolsImage = "tuxlab/sandbox-tools:latest"

// tools returns the volume of trusted tools every sandbox of kind k mounts
// (rt's), resolved (and filled) at first use and cached. A failure is not
// cached: once an operator builds the image, the next creation works without
// a restart.
func (s *Service) tools(ctx context.Context, k Kind, rt Runtime) (string, error) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	if v := s.toolsVolume[k]; v != "" {
		return v, nil
	}
	v, err := rt.ToolsVolume(ctx, s.opt.ToolsImage)
	switch {
	case errors.Is(err, ErrUnsupported) && k == KindMachine:
		return "", nil // a machine driver without a tools disk: scripts find no trusted tools (docs/machines.md)
	case errors.Is(err, ErrToolsMissing) && k == KindMachine:
		return "", &errs.Error{Kind: errs.Unavailable, Err: err, Detail: "The trusted tools of machines are not built on this host: an operator must run ./scripts/build-machine-image.sh"}
	case errors.Is(err, ErrToolsMissing):
		return "", &errs.Error{Kind: errs.Unavailable, Err: err, Detail: fmt.Sprintf(
			"The trusted tools image %s is not on this host: an operator must run ./scripts/build-images.sh tools", s.opt.ToolsImage)}
	case err != nil:
		return "", err
	}
	if s.toolsVolume == nil {
		s.toolsVolume = map[Kind]string{}
	}
	s.toolsVolume[k] = v
	return v, nil
}

// NewService returns a Service. runtime may be nil when no engine is configured:
// every call that needs it then answers ErrRuntimeUnavailable.
func NewService(ctx context.Context, store Store, runtime Runtime, o Options) (*Service, error) {
	o.defaults()
	b := make([]byte, 8)
	rand.Read(b)
	instance, err := store.SetSettingIfAbsent(ctx, "sandbox_instance_id", hex.EncodeToString(b))
	if err != nil {
		return nil, fmt.Errorf("sandbox instance id: %w", err)
	}
	return &Service{store: store, runtime: runtime, opt: o, instance: instance, pool: newPool()}, nil
}

// Instance is the id this install labels its engine objects with.
func (s *Service) Instance() string { return s.instance }

// Options returns the effective options.
func (s *Service) Options() Options { return s.opt }

func (s *Service) now() time.Time { return s.opt.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) rt() (Runtime, error) {
	if s.runtime == nil {
		return nil, ErrRuntimeUnavailable
	}
	return s.runtime, nil
}

// rtFor is the runtime that holds sandboxes of kind k: the container engine,
// or the machine driver.
func (s *Service) rtFor(k Kind) (Runtime, error) {
	if k != KindMachine {
		return s.rt()
	}
	if s.opt.Machines == nil {
		if s.opt.NoMachines != nil {
			return nil, s.opt.NoMachines
		}
		return nil, ErrNoMachines
	}
	return s.opt.Machines, nil
}

// runtimes are the runtimes this service has, containers first.
func (s *Service) runtimes() []Runtime {
	var out []Runtime
	for _, rt := range []Runtime{s.runtime, s.opt.Machines} {
		if rt != nil {
			out = append(out, rt)
		}
	}
	return out
}

// MachinesAvailable reports whether machines can be made here: the machine
// driver answers and its default image is built. The answer says why not.
func (s *Service) MachinesAvailable(ctx context.Context) error {
	rt, err := s.rtFor(KindMachine)
	if err != nil {
		return err
	}
	if err := rt.Ping(ctx); err != nil {
		return &errs.Error{Kind: errs.Unavailable, Err: err, RetryAfter: time.Minute, Detail: ErrNoMachines.Detail + " (" + err.Error() + ")"}
	}
	return nil
}

// Available reports whether the engine answers.
func (s *Service) Available(ctx context.Context) bool {
	rt, err := s.rt()
	return err == nil && rt.Ping(ctx) == nil
}

// Stats counts sandboxes for the admin statistics.
type Stats struct {
	Containers int `json:"containers"`
	Running    int `json:"running"`
	Templates  int `json:"templates"`
	// EngineAvailable says whether the container engine answers now.
	EngineAvailable bool `json:"engine_available"`
}

// Stats counts templates and containers, and checks the engine.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	var err error
	if _, st.Containers, err = s.store.FindContainers(ctx, ContainerFilter{Limit: 1}); err != nil {
		return st, err
	}
	if st.Running, err = s.store.CountRunning(ctx); err != nil {
		return st, err
	}
	ts, err := s.store.FindTemplates(ctx)
	st.Templates = len(ts)
	st.EngineAvailable = s.Available(ctx)
	return st, err
}

// Templates lists the templates.
func (s *Service) Templates(ctx context.Context) ([]*Template, error) {
	return s.store.FindTemplates(ctx)
}

// NewContainer is the input to create a sandbox.
type NewContainer struct {
	TemplateID int64
	Name       string // defaults to the template's name
	// Hostname is the sandbox's host name ("" for tuxlab's default).
	Hostname string
	// Segment, for machines, names a private segment the sandbox shares
	// with the others created with the same Segment (a lab attempt's
	// machines), where their host names resolve; "" for none. The segment
	// goes with the last of them.
	Segment string
}

// segmentPattern is what a segment's key may be: a short name tuxlab makes.
var segmentPattern = regexp.MustCompile(`^[a-z0-9-]{1,24}$`)

// MaxNameLen bounds a container name.
const MaxNameLen = 64

// FitName cuts name to MaxNameLen characters, so that a name made from a
// title (an exam's, a lab's) is always accepted.
func FitName(name string) string {
	if r := []rune(name); len(r) > MaxNameLen {
		return string(r[:MaxNameLen])
	}
	return name
}

// Create makes a sandbox for the actor and starts it: the answer is a running
// container, or an error and nothing left behind.
func (s *Service) Create(ctx context.Context, a actor.Actor, n NewContainer) (*Container, error) {
	began := time.Now()
	t, err := s.store.FindTemplateByID(ctx, n.TemplateID)
	if errors.Is(err, ErrTemplateNotFound) {
		return nil, errs.Field([]any{"template_id"}, "No sandbox template with this id", "value_error")
	}
	if err != nil {
		return nil, err
	}
	rt, err := s.rtFor(t.Kind)
	if err != nil {
		return nil, err
	}
	if t.Kind == KindMachine {
		if err := s.MachinesAvailable(ctx); err != nil {
			return nil, err
		}
	}
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" {
		n.Name = t.Name
	}
	if utf8.RuneCountInString(n.Name) > MaxNameLen || strings.ContainsAny(n.Name, "\r\n\t") {
		return nil, errs.Field([]any{"name"}, "Name must be one line of at most 64 characters", "string_too_long")
	}
	if n.Hostname != "" && !segmentPattern.MatchString(n.Hostname) {
		return nil, errs.Field([]any{"hostname"}, "A host name is lower-case letters, digits and dashes", "value_error")
	}
	if n.Segment != "" && (t.Kind != KindMachine || !segmentPattern.MatchString(n.Segment)) {
		return nil, errs.E(errs.Conflict, "Only machines share a private segment: this template makes containers")
	}
	// The learner's own quota answers first (409); the host-wide cap (503) is
	// the platform's problem, not the learner's. The transaction below checks
	// the quota again, authoritatively.
	mine, _, err := s.store.FindContainers(ctx, ContainerFilter{UserID: a.UserID})
	if err != nil {
		return nil, err
	}
	if err := s.checkUserQuota(mine); err != nil {
		return nil, err
	}
	if err := s.checkHostCapacity(ctx); err != nil {
		return nil, err
	}
	if ok, err := rt.ImageExists(ctx, t.Image); err != nil {
		return nil, err
	} else if !ok {
		return nil, imageMissing(t)
	}
	if _, err := s.tools(ctx, t.Kind, rt); err != nil {
		return nil, err
	}
	now := s.now()
	c := &Container{UserID: a.UserID, TemplateID: t.ID, Kind: t.Kind, Segment: n.Segment, Name: n.Name, Status: StatusCreating,
		CreatedAt: now, LastActivityAt: now, ExpiresAt: now.Add(s.opt.MaxLifetime)}
	err = s.store.CreateContainer(ctx, c, func(existing []*Container, running int) error {
		if err := s.checkUserQuota(existing); err != nil {
			return err
		}
		return s.checkHostRunning(running)
	})
	if err != nil {
		return nil, err
	}
	engineID, err := s.provision(ctx, rt, t, c, n.Hostname)
	if err != nil {
		s.discard(context.WithoutCancel(ctx), rt, c.ID, engineID)
		return nil, err
	}
	s.opt.Observer.SandboxCreated(time.Since(began))
	return s.store.FindContainerByID(ctx, c.ID)
}

// waitReady waits, within BootTimeout, until running sandbox c can run
// commands: at once for a container, once booted for a machine.
func (s *Service) waitReady(ctx context.Context, rt Runtime, c *Container) error {
	if c.Kind != KindMachine {
		return nil
	}
	bctx, cancel := context.WithTimeout(ctx, s.opt.BootTimeout)
	defer cancel()
	err := rt.WaitReady(bctx, c.EngineID)
	if err != nil && ctx.Err() == nil && bctx.Err() != nil {
		return s.bootFailed(context.WithoutCancel(ctx), rt, c, err)
	}
	return err
}

// bootFailed ends machine c, which did not answer within BootTimeout (err
// says where its boot stood: the console's tail, for the operator's log),
// and marks it broken: no QEMU keeps running for a guest that never comes.
func (s *Service) bootFailed(ctx context.Context, rt Runtime, c *Container, err error) error {
	s.opt.Log.Warn("a machine did not finish booting: stopped and marked broken", "container_id", c.ID, "user_id", c.UserID,
		"boot_timeout", s.opt.BootTimeout, "error", err.Error())
	if serr := rt.Stop(ctx, c.EngineID, s.opt.StopGrace); serr != nil && !errors.Is(serr, ErrGone) {
		s.opt.Log.Warn("stopping a machine that did not boot", "container_id", c.ID, "error", serr.Error())
	}
	detail := fmt.Sprintf("The machine did not finish booting within %s: delete it and create a new one", s.opt.BootTimeout)
	seen, now := c.EngineID, s.now()
	if _, uerr := s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
		if c.EngineID == seen {
			c.Status, c.StatusDetail, c.StoppedAt = StatusError, detail, &now
		}
		return nil
	}); uerr != nil {
		s.opt.Log.Warn("marking a machine that did not boot", "container_id", c.ID, "error", uerr.Error())
	}
	return errs.E(errs.Conflict, "This sandbox is broken ("+detail+")")
}

// SetMachineNote records what an operator should hear of machines once it is
// known, such as their running under software emulation; "" for nothing.
func (s *Service) SetMachineNote(note string) { s.machineNote.Store(&note) }

// MachineNotice says what keeps machines from working well here, for
// /readyz: unavailable (and why), no machine image, or the recorded note;
// "" when all is well or machines are off.
func (s *Service) MachineNotice(ctx context.Context) string {
	if s.opt.Machines == nil {
		return ""
	}
	if err := s.MachinesAvailable(ctx); err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return e.Detail
		}
		return err.Error()
	}
	if ok, err := s.opt.Machines.ImageExists(ctx, "current"); err == nil && !ok {
		return "No machine image: machine templates answer 503 until an operator runs ./scripts/build-machine-image.sh"
	}
	if n := s.machineNote.Load(); n != nil {
		return *n
	}
	return ""
}

// MachineWarmSpecs are the engine specs of the machine templates whose
// machines may restore a saved, booted state instead of booting (those
// without a network: each member of a segment has an address of its own),
// for the machine driver to prepare that state ahead of the first learner.
func (s *Service) MachineWarmSpecs(ctx context.Context) ([]Spec, error) {
	rt, err := s.rtFor(KindMachine)
	if err != nil {
		return nil, err
	}
	ts, err := s.store.FindTemplates(ctx)
	if err != nil {
		return nil, err
	}
	var out []Spec
	for _, t := range ts {
		if t.Kind != KindMachine || t.Network {
			continue
		}
		spec, err := s.engineSpec(ctx, rt, t, &Container{Kind: KindMachine, TemplateID: t.ID})
		if err != nil {
			return nil, err
		}
		out = append(out, spec)
	}
	return out, nil
}

// imageMissing is the 503 for a template whose image is not on the host,
// saying what an operator runs.
func imageMissing(t *Template) error {
	if t.Kind == KindMachine {
		return &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Minute, Detail: fmt.Sprintf(
			"The machine image %s is not built on this host: an operator must run ./scripts/build-machine-image.sh", t.Image)}
	}
	return &errs.Error{Kind: errs.Unavailable, Detail: fmt.Sprintf("Sandbox image %s is not on this host: an operator must run scripts/build-images.sh", t.Image)}
}

// checkUserQuota refuses a new sandbox past the user's quotas.
func (s *Service) checkUserQuota(existing []*Container) error {
	if len(existing) >= s.opt.MaxPerUser {
		return errs.Errorf(errs.Conflict, "Sandbox quota reached: you have %d of %d sandboxes; delete one first", len(existing), s.opt.MaxPerUser)
	}
	return s.checkUserRunning(existing)
}

func (s *Service) checkUserRunning(existing []*Container) error {
	running := 0
	for _, c := range existing {
		if c.Status == StatusRunning || c.Status == StatusCreating {
			running++
		}
	}
	if running >= s.opt.MaxRunningPerUser {
		return errs.Errorf(errs.Conflict, "Running sandbox quota reached: %d of %d are running; stop one first", running, s.opt.MaxRunningPerUser)
	}
	return nil
}

// checkHostCapacity protects the machine: past the host-wide cap, 503.
func (s *Service) checkHostCapacity(ctx context.Context) error {
	n, err := s.store.CountRunning(ctx)
	if err != nil {
		return err
	}
	return s.checkHostRunning(n)
}

// checkHostRunning refuses one more running sandbox past the host-wide cap.
// The store calls it again under a host-wide lock, so concurrent creations
// and starts cannot pass the cap together.
func (s *Service) checkHostRunning(n int) error {
	if n >= s.opt.MaxRunningHost {
		return &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Minute,
			Detail: "The platform is at capacity: too many sandboxes are running. Try again in a few minutes"}
	}
	return nil
}

// provision creates and starts the engine container of row c.
func (s *Service) provision(ctx context.Context, rt Runtime, t *Template, c *Container, hostname string) (string, error) {
	if hostname == "" && c.Segment == "" {
		if engineID, ok, err := s.adoptPooled(ctx, rt, t, c); ok {
			return engineID, err
		}
	}
	spec, err := s.engineSpec(ctx, rt, t, c)
	if err != nil {
		return "", err
	}
	if hostname != "" {
		spec.Hostname = hostname
	}
	if c.Segment != "" {
		spec.Network = s.segmentNetwork(c.Segment)
		if err := rt.EnsureNetwork(ctx, spec.Network, map[string]string{
			LabelManaged: "true", LabelInstance: s.instance, LabelUser: strconv.FormatInt(c.UserID, 10),
		}); err != nil {
			return "", err
		}
	} else if t.Network {
		if err := rt.EnsureNetwork(ctx, s.userNetwork(c.UserID, c.Kind), map[string]string{
			LabelManaged: "true", LabelInstance: s.instance, LabelUser: strconv.FormatInt(c.UserID, 10),
		}); err != nil {
			return "", err
		}
	}
	engineID, err := rt.Create(ctx, spec)
	if err != nil {
		return "", err
	}
	if _, err := s.store.UpdateContainer(ctx, c.ID, func(c *Container) error { c.EngineID = engineID; return nil }); err != nil {
		return engineID, err
	}
	if err := rt.Start(ctx, engineID); err != nil {
		return engineID, err
	}
	return engineID, s.markRunning(ctx, c, engineID)
}

// engineSpec is spec with the trusted tools mounted, and the disk limit left
// to the disk watch where the engine cannot apply it (disk.go); the label
// keeps the limit either way.
func (s *Service) engineSpec(ctx context.Context, rt Runtime, t *Template, c *Container) (Spec, error) {
	spec := s.spec(t, c)
	tools, err := s.tools(ctx, c.Kind, rt)
	if err != nil {
		return Spec{}, err
	}
	spec.ToolsVolume = tools
	if c.Kind == KindMachine {
		// A machine's root disk is its bound (an overlay of that size), and
		// its blank disks are the template's.
		spec.DiskMB = t.DiskMB
		if spec.DiskMB == 0 {
			spec.DiskMB = s.opt.MachineLimits.DefaultRoot
		}
		spec.Labels[LabelDiskMB] = strconv.Itoa(spec.DiskMB)
		spec.Labels[LabelDiskQuota] = "engine" // the disk watch leaves it alone
		spec.ExtraDisksMB = slices.Clone(t.ExtraDisksMB)
		spec.User = t.User
		return spec, nil
	}
	switch {
	case spec.DiskMB <= 0:
	case s.engineQuota(ctx, rt, t.Image):
		spec.Labels[LabelDiskQuota] = "engine"
	default:
		spec.DiskMB = 0
	}
	return spec, nil
}

// discard removes what a failed creation left: the engine container and the row.
func (s *Service) discard(ctx context.Context, rt Runtime, id int64, engineID string) {
	if engineID != "" {
		if err := rt.Remove(ctx, engineID); err != nil && !errors.Is(err, ErrGone) {
			s.opt.Log.Warn("could not remove a failed sandbox; reconciliation will", "container_id", id, "error", err.Error())
		}
	}
	if err := s.store.DeleteContainer(ctx, id); err != nil {
		s.opt.Log.Warn("could not delete a failed sandbox row", "container_id", id, "error", err.Error())
	}
}

// spec turns a template into an engine spec for container c.
func (s *Service) spec(t *Template, c *Container) Spec {
	network := "none"
	if t.Network {
		network = s.userNetwork(c.UserID, c.Kind)
	}
	return Spec{
		Name:     fmt.Sprintf("tuxlab-%s-%d", s.instance[:8], c.ID),
		Image:    t.Image,
		Hostname: "tuxlab",
		// The keep-alive runs as root, so the learner cannot end the sandbox
		// with `kill 1` (terminals open as t.User). The engine's init is PID 1
		// and reaps zombies.
		User:       "0",
		Cmd:        keepAlive,
		StopSignal: stopSignal,
		Env:        []string{"TERM=xterm-256color"},
		Labels: map[string]string{
			LabelManaged: "true", LabelInstance: s.instance,
			LabelContainer: strconv.FormatInt(c.ID, 10), LabelUser: strconv.FormatInt(c.UserID, 10),
			LabelTemplate: strconv.FormatInt(t.ID, 10), LabelDiskMB: strconv.Itoa(s.diskLimitMB(t)),
		},
		MemoryBytes:     int64(t.MemoryMB) << 20,
		NanoCPUs:        int64(t.CPUMillis) * 1_000_000,
		PidsLimit:       int64(t.PidsLimit),
		DiskMB:          s.diskLimitMB(t),
		Network:         network,
		Runtime:         t.Runtime,
		CapAdd:          t.CapAdd,
		NoNewPrivileges: t.NoNewPrivileges,
	}
}

// stopSignal ends a sandbox: SIGRTMIN+3, the signal systemd halts on, so that
// SIGTERM (a learner's `sudo kill 1`) leaves the sandbox running, as it leaves
// a real server running.
const stopSignal = "SIGRTMIN+3"

// keepAlive is the sandbox's main process. tuxlab's images ship tuxlab-idle,
// which waits without child processes (so `pgrep sleep` in a lesson finds only
// the learner's) and ignores SIGTERM; other images get a plain shell loop.
var keepAlive = []string{"/bin/sh", "-c", "[ -x /usr/local/sbin/tuxlab-idle ] && exec /usr/local/sbin/tuxlab-idle; " +
	"trap 'exit 0' TERM INT 37; while :; do sleep 3600 & wait $!; done"}

// owned returns container id if the actor may see it; another user's container
// is ErrContainerNotFound, exactly as if it did not exist.
func (s *Service) owned(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.store.FindContainerByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !a.Owns(c.UserID) {
		return nil, ErrContainerNotFound
	}
	return c, nil
}

// List returns the actor's own containers with their state checked against the engine.
func (s *Service) List(ctx context.Context, a actor.Actor) ([]*Container, error) {
	rt, err := s.rt()
	if err != nil {
		return nil, err
	}
	// Statuses come from the engine: without one there is nothing true to say.
	if err := rt.Ping(ctx); err != nil {
		return nil, err
	}
	cs, _, err := s.store.FindContainers(ctx, ContainerFilter{UserID: a.UserID})
	if err != nil {
		return nil, err
	}
	for i, c := range cs {
		krt, err := s.rtFor(c.Kind)
		if err != nil {
			continue // a machine on a host that lost its driver: as stored
		}
		if cs[i], err = s.refresh(ctx, krt, c); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// ListAll returns a page of every user's containers, for admins.
func (s *Service) ListAll(ctx context.Context, offset, limit int) ([]*Container, int, error) {
	return s.store.FindContainers(ctx, ContainerFilter{Offset: offset, Limit: limit})
}

// Get returns one container with its state checked against the engine.
func (s *Service) Get(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.owned(ctx, a, id)
	if err != nil {
		return nil, err
	}
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, err
	}
	return s.refresh(ctx, rt, c)
}

// Visit is Get for a learner looking at a sandbox: an API call on a running
// sandbox counts as activity and pushes its idle stop forward.
func (s *Service) Visit(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.Get(ctx, a, id)
	if err != nil || c.Status != StatusRunning {
		return c, err
	}
	return s.Touch(ctx, c.ID)
}

// refresh brings a row in line with the engine's truth.
func (s *Service) refresh(ctx context.Context, rt Runtime, c *Container) (*Container, error) {
	if c.EngineID == "" || c.Status == StatusCreating {
		return c, nil
	}
	// What the engine says is about this engine container: each update below
	// applies only if the row still points at it when it is written.
	seen := c.EngineID
	st, err := rt.Inspect(ctx, seen)
	switch {
	case errors.Is(err, ErrGone):
		if c.Status == StatusError {
			return c, nil
		}
		return s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
			if c.EngineID != seen {
				return nil // changed meanwhile (removed on purpose, recreated): that is newer
			}
			c.Status, c.StatusDetail = StatusError, "The container vanished from the engine: delete this sandbox and create a new one"
			return nil
		})
	case err != nil:
		return nil, err
	case st.Running && c.Status != StatusRunning:
		return s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
			if c.EngineID != seen {
				return nil
			}
			c.Status, c.StatusDetail = StatusRunning, ""
			return nil
		})
	case !st.Running && c.Status == StatusRunning:
		detail := fmt.Sprintf("The container exited (code %d)", st.ExitCode)
		if st.OOMKilled {
			detail = "The container ran out of memory and was stopped"
		}
		at := st.FinishedAt
		if at.IsZero() {
			at = s.now()
		}
		return s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
			if c.EngineID != seen {
				return nil
			}
			c.Status, c.StatusDetail, c.StoppedAt = StatusStopped, detail, &at
			return nil
		})
	}
	return c, nil
}

// Resume returns the actor's sandbox id running, started again if it was
// stopped (the idle stop may have stopped it), for work that needs it now
// (a lab's or an exam's checks). A sandbox that no longer exists, or is
// broken, is nil without an error: as good as gone to the caller.
func (s *Service) Resume(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.Get(ctx, a, id)
	if errors.Is(err, ErrContainerNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch c.Status {
	case StatusRunning:
		return c, nil
	case StatusStopped:
		return s.Start(ctx, a, c.ID)
	}
	return nil, nil
}

// Start starts a stopped sandbox; starting a running one changes nothing.
func (s *Service) Start(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.Get(ctx, a, id)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Status == StatusRunning:
		return s.Touch(ctx, c.ID)
	case c.Status == StatusError || c.EngineID == "":
		return nil, errs.E(errs.Conflict, "This sandbox is broken ("+c.StatusDetail+"): delete it and create a new one")
	}
	mine, _, err := s.store.FindContainers(ctx, ContainerFilter{UserID: c.UserID})
	if err != nil {
		return nil, err
	}
	if err := s.checkUserRunning(mine); err != nil { // the learner's quota answers first
		return nil, err
	}
	if err := s.checkHostCapacity(ctx); err != nil {
		return nil, err
	}
	// Reserve the start under the user's lock, so concurrent starts cannot pass
	// the running quota together; undo the reservation if the engine fails.
	now := s.now()
	prevStopped := c.StoppedAt
	_, err = s.store.UpdateContainerOfUser(ctx, c.ID, func(c *Container, others []*Container, running int) error {
		if c.Status == StatusRunning {
			return nil
		}
		if err := s.checkUserRunning(others); err != nil {
			return err
		}
		if err := s.checkHostRunning(running); err != nil {
			return err
		}
		c.Status, c.StatusDetail, c.StartedAt, c.StoppedAt, c.LastActivityAt = StatusRunning, "", &now, nil, now
		return nil
	})
	if err != nil {
		return nil, err
	}
	rt, _ := s.rtFor(c.Kind) // Get found it
	began := time.Now()
	if err := rt.Start(ctx, c.EngineID); err != nil {
		return nil, s.startFailed(context.WithoutCancel(ctx), c, prevStopped, err)
	}
	s.opt.Observer.SandboxStarted(time.Since(began))
	// A sandbox stopped from inside (root ending its keep-alive) kept what it
	// wrote since it was last measured: measure it before it is used again.
	removed, err := s.checkDiskOf(ctx, rt, c)
	if err != nil {
		s.opt.Log.Warn("measuring a started sandbox's disk use", "container_id", c.ID, "error", err.Error())
	}
	if removed {
		c, err := s.store.FindContainerByID(ctx, c.ID)
		if err != nil {
			return nil, err
		}
		return nil, errs.E(errs.Conflict, "This sandbox is broken ("+c.StatusDetail+"): delete it and create a new one")
	}
	return s.store.FindContainerByID(ctx, c.ID)
}

// startFailed undoes the reservation of a start the engine refused (err) and
// returns the error for the caller. A container that no longer exists (it
// vanished between the refresh and the start) makes the row broken, as a
// refresh would have; any other failure leaves it stopped, to try again.
func (s *Service) startFailed(ctx context.Context, c *Container, prevStopped *time.Time, err error) error {
	status, detail := StatusStopped, "The engine could not start this sandbox"
	if errors.Is(err, ErrGone) {
		status, detail = StatusError, "The container vanished from the engine: delete this sandbox and create a new one"
		err = errs.E(errs.Conflict, "This sandbox is broken ("+detail+"): delete it and create a new one")
	}
	seen := c.EngineID
	s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
		if c.EngineID != seen {
			return nil // changed meanwhile: that is newer
		}
		c.Status, c.StatusDetail, c.StoppedAt = status, detail, prevStopped
		return nil
	})
	return err
}

// Stop stops a running sandbox; stopping a stopped one changes nothing.
func (s *Service) Stop(ctx context.Context, a actor.Actor, id int64) (*Container, error) {
	c, err := s.Get(ctx, a, id)
	if err != nil {
		return nil, err
	}
	if c.Status != StatusRunning {
		return c, nil
	}
	return s.stop(ctx, c, "")
}

func (s *Service) stop(ctx context.Context, c *Container, detail string) (*Container, error) {
	rt, err := s.rtFor(c.Kind)
	if err != nil {
		return nil, err
	}
	// A stopped sandbox keeps what it wrote, and the watch measures only
	// running ones: measure it first, so that a stop within an interval of a
	// large write does not keep it.
	removed, err := s.checkDiskOf(ctx, rt, c)
	if err != nil {
		s.opt.Log.Warn("measuring a sandbox's disk use before stopping it", "container_id", c.ID, "error", err.Error())
	}
	if removed {
		return s.store.FindContainerByID(ctx, c.ID)
	}
	if err := rt.Stop(ctx, c.EngineID, s.opt.StopGrace); err != nil && !errors.Is(err, ErrGone) {
		return nil, err
	}
	now := s.now()
	return s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
		c.Status, c.StatusDetail, c.StoppedAt = StatusStopped, detail, &now
		return nil
	})
}

// Delete removes a sandbox from the engine, then its row.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64) error {
	c, err := s.owned(ctx, a, id)
	if err != nil {
		return err
	}
	return s.remove(ctx, c)
}

func (s *Service) remove(ctx context.Context, c *Container) error {
	if c.EngineID != "" {
		rt, err := s.rtFor(c.Kind)
		if err != nil {
			return err
		}
		if err := rt.Remove(ctx, c.EngineID); err != nil && !errors.Is(err, ErrGone) {
			return err
		}
	}
	if err := s.store.DeleteContainer(ctx, c.ID); err != nil {
		return err
	}
	s.dropUserNetwork(ctx, c.UserID, c.Kind)
	if c.Segment != "" {
		// The runtime keeps a segment another sandbox still uses.
		if rt, err := s.rtFor(c.Kind); err == nil {
			if err := rt.RemoveNetwork(ctx, s.segmentNetwork(c.Segment)); err != nil {
				s.opt.Log.Warn("could not remove a private segment", "segment", c.Segment, "error", err.Error())
			}
		}
	}
	return nil
}

// userNetwork is the internal network a learner's sandboxes of kind k share
// (templates with network): a learner's own sandboxes reach each other,
// nobody else's. Machines have a segment of their own (on the machine
// driver), which containers do not reach.
func (s *Service) userNetwork(userID int64, k Kind) string {
	if k == KindMachine {
		return fmt.Sprintf("%s-%s-m%d", s.opt.Network, s.instance[:8], userID)
	}
	return fmt.Sprintf("%s-%s-u%d", s.opt.Network, s.instance[:8], userID)
}

// segmentNetwork is the runtime's name of private segment key.
func (s *Service) segmentNetwork(key string) string {
	return fmt.Sprintf("%s-%s-%s", s.opt.Network, s.instance[:8], key)
}

// dropUserNetwork removes a learner's network once none of their sandboxes
// may use it (a stopped sandbox would not start without it).
func (s *Service) dropUserNetwork(ctx context.Context, userID int64, k Kind) {
	rt, err := s.rtFor(k)
	if err != nil {
		return
	}
	left, _, err := s.store.FindContainers(ctx, ContainerFilter{UserID: userID})
	if err != nil {
		return
	}
	for _, c := range left {
		if c.Kind != k {
			continue
		}
		if t, err := s.store.FindTemplateByID(ctx, c.TemplateID); err != nil || t.Network {
			return
		}
	}
	if err := rt.RemoveNetwork(ctx, s.userNetwork(userID, k)); err != nil {
		s.opt.Log.Warn("could not remove a learner's sandbox network", "user_id", userID, "error", err.Error())
	}
}

// Touch records activity on a sandbox, which pushes its idle stop forward.
func (s *Service) Touch(ctx context.Context, id int64) (*Container, error) {
	now := s.now()
	return s.store.UpdateContainer(ctx, id, func(c *Container) error { c.LastActivityAt = now; return nil })
}

// idleStop is when sandbox c stops if nothing happens in it, were it running.
func (s *Service) idleStop(c *Container) time.Time { return c.LastActivityAt.Add(s.opt.IdleTimeout) }

// IdleStopAt is when a running sandbox stops if nothing happens in it;
// activity moves it. A sandbox not running has none (nil).
func (s *Service) IdleStopAt(c *Container) *time.Time {
	if c.Status != StatusRunning {
		return nil
	}
	t := s.idleStop(c)
	return &t
}

// Deadline says when a running sandbox will end and why: the idle stop or the lifetime.
func (s *Service) Deadline(c *Container) (time.Time, string) {
	idle := s.idleStop(c)
	if c.ExpiresAt.Before(idle) {
		return c.ExpiresAt, "lifetime"
	}
	return idle, "idle"
}

// Sweep applies the lifecycle at the service's clock: sandboxes past their
// maximum lifetime are removed, running ones idle past the timeout are stopped.
func (s *Service) Sweep(ctx context.Context) error {
	if len(s.runtimes()) == 0 {
		return ErrRuntimeUnavailable
	}
	cs, _, err := s.store.FindContainers(ctx, ContainerFilter{})
	if err != nil {
		return err
	}
	now := s.now()
	var errList []error
	for _, c := range cs {
		if _, err := s.rtFor(c.Kind); err != nil {
			continue // its runtime is not here: left as it is
		}
		switch {
		case !now.Before(c.ExpiresAt):
			s.opt.Log.Info("removing sandbox at the end of its lifetime", "container_id", c.ID, "user_id", c.UserID)
			errList = append(errList, s.remove(ctx, c))
		case c.Status == StatusRunning && !now.Before(s.idleStop(c)):
			s.opt.Log.Info("stopping idle sandbox", "container_id", c.ID, "user_id", c.UserID)
			_, err := s.stop(ctx, c, fmt.Sprintf("Stopped after %s without activity", s.opt.IdleTimeout))
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// engineContainers lists this install's containers on the engine, running or
// not, warm pool entries included.
func (s *Service) engineContainers(ctx context.Context, rt Runtime) ([]Instance, error) {
	return rt.List(ctx, map[string]string{LabelManaged: "true", LabelInstance: s.instance})
}

// Reconcile makes the database and the engine agree: engine containers of this
// install without a row are removed, rows whose container vanished are marked,
// and statuses follow the engine.
func (s *Service) Reconcile(ctx context.Context) error {
	if len(s.runtimes()) == 0 {
		return ErrRuntimeUnavailable
	}
	all, _, err := s.store.FindContainers(ctx, ContainerFilter{})
	if err != nil {
		return err
	}
	var errList []error
	for _, k := range []Kind{KindContainer, KindMachine} {
		rt, err := s.rtFor(k)
		if err != nil {
			continue
		}
		var rows []*Container
		for _, c := range all {
			if c.Kind == k || (k == KindContainer && c.Kind == "") {
				rows = append(rows, c)
			}
		}
		errList = append(errList, s.reconcileOn(ctx, rt, rows))
	}
	return errors.Join(errList...)
}

// reconcileOn is Reconcile on one runtime, with the rows of its kind.
func (s *Service) reconcileOn(ctx context.Context, rt Runtime, rows []*Container) error {
	instances, err := s.engineContainers(ctx, rt)
	if err != nil {
		return err
	}
	byEngine := map[string]*Container{}
	for _, c := range rows {
		if c.EngineID != "" {
			byEngine[c.EngineID] = c
		}
	}
	var errList []error
	listed := make(map[string]Instance, len(instances))
	owners := &poolOwners{s: s, alive: map[string]bool{}}
	defer owners.forgetDead(ctx)
	for _, in := range instances {
		listed[in.EngineID] = in
		if byEngine[in.EngineID] == nil {
			pool, leftover, err := s.pooledLeftover(ctx, owners, in)
			if err != nil {
				errList = append(errList, err)
				continue // whose it is is not known: left for the next pass
			}
			if pool && !leftover {
				continue // a warm sandbox in a live process's pool
			}
			if pool {
				s.opt.Log.Info("removing a warm sandbox whose process is gone", "engine_id", in.EngineID, "owner", in.Labels[LabelPoolOwner])
				if err := rt.Remove(ctx, in.EngineID); err != nil && !errors.Is(err, ErrGone) {
					errList = append(errList, err)
				}
				continue
			}
			// A row may still be creating this container: give it a grace period.
			if id, err := strconv.ParseInt(in.Labels[LabelContainer], 10, 64); err == nil {
				if c, err := s.store.FindContainerByID(ctx, id); err == nil && c.Status == StatusCreating && s.now().Sub(c.CreatedAt) < 2*time.Minute {
					continue
				}
			}
			s.opt.Log.Info("removing orphaned engine container", "engine_id", in.EngineID, "labels", in.Labels)
			if err := rt.Remove(ctx, in.EngineID); err != nil && !errors.Is(err, ErrGone) {
				errList = append(errList, err)
			}
		}
	}
	for _, c := range rows {
		switch {
		case c.Status == StatusCreating && s.now().Sub(c.CreatedAt) > 2*time.Minute:
			// A creation that never finished (the server died mid-way): the
			// engine says how it ended.
			in, ok := listed[c.EngineID]
			_, err := s.store.UpdateContainer(ctx, c.ID, func(c *Container) error {
				if c.Status != StatusCreating {
					return nil
				}
				if ok && c.EngineID != "" && in.State.Running {
					now := s.now()
					c.Status, c.StatusDetail, c.StartedAt, c.LastActivityAt = StatusRunning, "", &now, now
					return nil
				}
				c.Status, c.StatusDetail = StatusError, "Creation did not finish: delete this sandbox and create a new one"
				return nil
			})
			errList = append(errList, err)
		case c.EngineID != "":
			// The list already tells which containers run; only a container that
			// vanished or changed state needs refresh (an inspect) to record why.
			if in, ok := listed[c.EngineID]; ok && in.State.Running == (c.Status == StatusRunning) && c.Status != StatusError {
				continue
			}
			if _, err := s.refresh(ctx, rt, c); err != nil {
				errList = append(errList, err)
			}
		}
	}
	return errors.Join(errList...)
}

// Run reconciles at once and then sweeps and reconciles every interval until
// ctx ends (each round only when Options.Lead says this process leads), checks once that sandbox networks reach nothing on the host
// (CheckIsolation), watches sandboxes' disk use every DiskCheckInterval, and
// keeps the warm pool filled, with its heartbeat. Failures are logged; the
// loops go on. Run returns once every loop has ended, the warm pool is
// removed and its heartbeat deleted: the caller may then close the store and
// the engine client.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	anyRuntime := len(s.runtimes()) > 0
	pooling := s.runtime != nil && s.opt.PoolSize > 0
	defer func() {
		wg.Wait()
		if pooling {
			s.endHeartbeat(ctx)
		}
	}()
	if s.runtime != nil {
		wg.Go(func() { s.watchDisk(ctx, s.opt.DiskCheckInterval) })
	}
	if pooling {
		// Alive before the first pool container exists, so no other process
		// takes it for a dead one's.
		s.beat(ctx)
		wg.Go(func() { s.heartbeat(ctx) })
		wg.Go(func() { s.runPool(ctx) })
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if anyRuntime && s.leads(ctx) {
			if err := s.Reconcile(ctx); err != nil && ctx.Err() == nil {
				s.opt.Log.Warn("sandbox reconciliation", "error", err.Error())
			}
			if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.opt.Log.Warn("sandbox lifecycle sweep", "error", err.Error())
			}
		}
		if anyRuntime && s.runtime != nil {
			s.checkIsolationOnce(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// leads says whether this process runs this round of reconciliation and
// sweep (Options.Lead).
func (s *Service) leads(ctx context.Context) bool {
	return s.opt.Lead == nil || s.opt.Lead(ctx)
}
