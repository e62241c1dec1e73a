// Package sandbox provides learners' sandbox containers: templates, the
// containers made from them, per-user quotas and a host-wide cap, the idle
// stop and maximum lifetime, and reconciliation of the database with the
// container engine. The engine sits behind the narrow Runtime interface.
package sandbox

import (
	"context"
	"io"
	"time"

	"tuxlab/internal/errs"
)

// Status is a container's state as tuxlab reports it.
type Status string

// The statuses of DECISIONS.md.
const (
	StatusCreating Status = "creating"
	StatusRunning  Status = "running"
	StatusStopped  Status = "stopped"
	StatusError    Status = "error"
)

// Kind is what a sandbox is: a container sharing the host's kernel, or a
// machine, a virtual machine with its own kernel, systemd as PID 1, disks
// and a reboot (docs/machines.md).
type Kind string

// The kinds of sandbox.
const (
	KindContainer Kind = "container"
	KindMachine   Kind = "machine"
)

// Template describes how to make a sandbox: image, limits and hardening.
type Template struct {
	ID          int64
	Name        string
	Description string
	Kind        Kind // container or machine; a machine's Image names a machine image ("current")
	Image       string
	// Limits.
	MemoryMB  int
	CPUMillis int // thousandths of a CPU
	PidsLimit int
	DiskMB    int // writable space in MiB; 0: the host's default (TUXLAB_SANDBOX_DISK_MB)
	// Hardening and environment.
	Network         bool     // false: no network at all; true: the internal sandbox network, no route out
	Runtime         string   // "" for the engine's default (runc), or "runsc" (gVisor)
	User            string   // the user terminals open as
	Shell           []string // the terminal's command, e.g. ["/bin/bash", "-l"]
	CapAdd          []string // capabilities kept after dropping all
	NoNewPrivileges bool     // false only for templates whose user needs sudo (setuid)
	// ExtraDisksMB are the sizes of the blank disks a machine gets besides
	// its root disk (vdb, vdc, ...); containers have none.
	ExtraDisksMB []int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Container is a learner's sandbox.
type Container struct {
	ID             int64
	UserID         int64
	TemplateID     int64
	Kind           Kind   // the template's kind when it was made: which runtime holds it
	Segment        string // the private segment it shares with others (a lab's machines); "" for none
	Name           string
	EngineID       string // empty until the engine made it
	Status         Status
	StatusDetail   string
	CreatedAt      time.Time
	StartedAt      *time.Time
	StoppedAt      *time.Time
	ExpiresAt      time.Time // the maximum lifetime: removed then, whatever happens
	LastActivityAt time.Time // terminal input or an API call on it; the idle stop slides with it
}

// Spec is what the engine needs to create a container.
type Spec struct {
	Name            string
	Image           string
	Hostname        string
	User            string
	Cmd             []string
	Env             []string
	Labels          map[string]string
	MemoryBytes     int64
	NanoCPUs        int64
	PidsLimit       int64
	DiskMB          int
	Network         string // "none" or the name of an internal network
	Runtime         string
	CapAdd          []string
	NoNewPrivileges bool
	StopSignal      string // what the engine sends to stop it ("" for SIGTERM)
	// ToolsVolume names the volume of trusted tools (Runtime.ToolsVolume),
	// mounted read-only at ToolsDir; "" mounts nothing.
	ToolsVolume string
	// ExtraDisksMB are the sizes, in MiB, of blank disks a machine gets
	// besides its root disk (machine drivers only; container drivers
	// ignore it).
	ExtraDisksMB []int
}

// ToolsDir is where every sandbox sees the trusted tools, read-only: the
// static shells and utilities scripts run with (docs/sandboxes.md).
const ToolsDir = "/.tuxlab"

// ChangeKind says how a path differs from the container's image.
type ChangeKind int

// The kinds of change, as the engine reports them.
const (
	ChangeModified ChangeKind = iota
	ChangeAdded
	ChangeDeleted
)

// Change is one path of a container's file system that differs from its image.
type Change struct {
	Path string
	Kind ChangeKind
}

// State is what the engine says about a container.
type State struct {
	Running    bool
	Status     string // the engine's word: created, running, exited, ...
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	OOMKilled  bool
	// Created is when the engine made the container (Inspect only): every
	// file changed in it since has a change time (ctime) no later.
	Created time.Time
}

// Instance is an engine container carrying tuxlab's labels.
type Instance struct {
	EngineID string
	Labels   map[string]string
	State    State
}

// ExecSpec describes a command to run in a container.
type ExecSpec struct {
	Cmd  []string
	User string
	Env  []string
	Dir  string // working directory ("" for the image's)
	TTY  bool
	Cols uint
	Rows uint
}

// Session is a running exec: its input and output, a terminal size, and its
// end. Its methods may be called from different goroutines (one reading, one
// writing, one resizing), but each of them from one goroutine at a time.
type Session interface {
	// Read returns the command's output: with a TTY the terminal's raw
	// bytes, without one stdout and stderr as the driver joins them. It
	// returns io.EOF (or another error) once the stream has ended, which is
	// not the command's end: see Wait.
	//
	// Write feeds the command's input. Close ends the stream and releases
	// it; it returns nil, also when called again. Closing the stream does
	// not promise that the command ends: a command with a TTY sees its
	// terminal hang up on most engines, but Docker 20.10 leaves an exec
	// running when its stream closes, so callers that need the command
	// gone must end it themselves (the terminal relay and reap do).
	io.ReadWriteCloser
	// Resize sets the size of the session's terminal (TTY sessions only).
	// It returns ErrGone if the exec or its container no longer exists,
	// ErrRuntimeUnavailable if the engine cannot be reached, or ctx's error.
	Resize(ctx context.Context, cols, rows uint) error
	// Wait blocks until the command has ended and returns its exit code.
	// Its stream's end comes first: the driver waits until the engine has
	// recorded the code. It returns ctx's error if ctx ends first,
	// ErrGone if the container was removed meanwhile, and
	// ErrRuntimeUnavailable if the engine cannot be reached; the code is
	// then -1.
	Wait(ctx context.Context) (int, error)
}

// Runtime is the container engine as tuxlab needs it: the port the sandbox
// service, labs and exams talk to, with one driver per engine
// (internal/sandbox/docker today; a Kubernetes or machine driver later).
// Every driver passes the contract suite of internal/sandbox/sandboxtest,
// and sandboxtest.Runtime is a fake made of function fields for tests of
// failure paths.
//
// The errors below are the domain's; a driver wraps the engine's own error
// with them (errors.Is finds both). Every method also returns
// ErrRuntimeUnavailable when the engine cannot be reached, and ctx's error
// when ctx ends first. Any other error is the engine refusing the request,
// which callers treat as an internal error.
//
// Engine quirks stay in the driver where it can hide them. Two it cannot,
// which callers must allow for: an engine may ignore an exec's initial
// terminal size (Docker before API 1.42, e.g. 20.10: ExecSpec.Cols and Rows
// are a hint, and a resize can only follow the start), and closing a
// Session may leave its command running (Docker 20.10). The terminal sets
// its size inside the sandbox before the shell starts and hangs itself up
// (terminal.go) for these reasons.
type Runtime interface {
	// Ping checks that the engine answers: nil, or ErrRuntimeUnavailable.
	Ping(ctx context.Context) error
	// ImageExists reports whether image is on the engine; a missing image
	// is false with no error.
	ImageExists(ctx context.Context, image string) (bool, error)
	// EnsureNetwork makes an internal network named name (no route out of
	// the host, no address of the host on it) carrying labels, unless it
	// exists; a second call with the same name changes nothing.
	EnsureNetwork(ctx context.Context, name string, labels map[string]string) error
	// RemoveNetwork removes a network nothing uses. A network that is gone,
	// or still in use (it goes with its last container), is nil too.
	RemoveNetwork(ctx context.Context, name string) error
	// ProbeDiskQuota returns nil when the engine can limit a container's
	// writable layer (Spec.DiskMB), and ErrNoDiskQuota when its storage
	// cannot (image: one that exists). It leaves nothing behind.
	ProbeDiskQuota(ctx context.Context, image string) error
	// DiskUsage returns the disk space each container of engineIDs takes
	// beyond its image, in bytes: its writable layer, counted in allocated
	// blocks where the engine allows (sparse files cost what they hold), and
	// the files its processes deleted but hold open. Containers that no
	// longer exist are left out (no ErrGone). With an error it may still
	// answer for some.
	DiskUsage(ctx context.Context, engineIDs []string) (map[string]int64, error)
	// Create makes a container from s, hardened as Spec says, not started,
	// and returns its engine id. It returns ErrNoDiskQuota when s.DiskMB is
	// set and the engine cannot apply it. A failed Create leaves nothing
	// behind. A network s.Network names must exist by Start: a missing one
	// is ErrGone from Create or from Start (Docker's answer is Start's).
	Create(ctx context.Context, s Spec) (engineID string, err error)
	// Start starts a created or stopped container; starting a running one
	// changes nothing. It returns ErrGone if the container, or the network
	// it was created on, does not exist.
	Start(ctx context.Context, engineID string) error
	// Stop asks the container's main process to end (Spec.StopSignal) and
	// kills it after grace; stopping a stopped container changes nothing.
	// It returns ErrGone if the container does not exist.
	Stop(ctx context.Context, engineID string, grace time.Duration) error
	// Remove deletes a container, running or not, with what it wrote. It
	// returns ErrGone if the container does not exist (callers that only
	// want it gone ignore that).
	Remove(ctx context.Context, engineID string) error
	// Inspect returns a container's state, with Created set. It returns
	// ErrGone if the container does not exist.
	Inspect(ctx context.Context, engineID string) (State, error)
	// List returns the containers carrying every one of labels (key and
	// value), running or not; their State has Running and Status only. No
	// match is an empty list, not an error.
	List(ctx context.Context, labels map[string]string) ([]Instance, error)
	// Exec starts s.Cmd in a running container and returns its session,
	// with a terminal when s.TTY (of s.Cols × s.Rows, which an engine may
	// ignore: see above). It returns ErrGone if the container does not
	// exist, and the engine's refusal (wrapped, not ErrGone) if it exists
	// but is not running. A command that cannot be found is not an error of
	// Exec: its session ends with the shell's code for it (126 or 127).
	Exec(ctx context.Context, engineID string, s ExecSpec) (Session, error)
	// ToolsVolume returns the name of a volume holding the /tuxlab
	// directory of image (the trusted tools), made and filled once per
	// image id, which Spec.ToolsVolume mounts read-only at ToolsDir. It
	// returns ErrToolsMissing when the image is not on the engine.
	ToolsVolume(ctx context.Context, image string) (string, error)
	// Changes lists the paths of a container's file system that differ from
	// its image: modified, added or deleted, in no set order. Mount points
	// the engine adds in system directories on every container (Docker's
	// init) are left out, so a fresh sandbox never looks tampered with;
	// others (ToolsDir) and what the driver writes at Create
	// (/etc/machine-id) are listed.
	// It returns ErrGone if the container does not exist.
	Changes(ctx context.Context, engineID string) ([]Change, error)
	// WaitReady waits until a started sandbox can run commands: a container
	// at once, a machine once it has booted far enough for its channel to
	// answer. It returns ctx's error if ctx ends first, and ErrGone if the
	// sandbox does not exist.
	WaitReady(ctx context.Context, engineID string) error
	// Run runs a command without a TTY to its end: stdin (nil for none) is
	// fed to it and then closed, and its stdout and stderr are copied
	// apart. It returns the command's exit code; a command that exits
	// non-zero is not an error. When ctx ends first, Run stops reading and
	// returns ctx's error with -1 (the command may go on: callers that
	// need it ended reap it). It returns ErrGone if the container does not
	// exist, and the engine's refusal if it is not running.
	Run(ctx context.Context, engineID string, s ExecSpec, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

// Errors of the sandbox domain.
var (
	ErrRuntimeUnavailable = &errs.Error{Kind: errs.Unavailable, Detail: "Sandbox runtime unavailable", RetryAfter: 30 * time.Second}
	ErrGone               = errs.E(errs.NotFound, "Container no longer exists in the engine")
	ErrContainerNotFound  = errs.E(errs.NotFound, "Container not found")
	ErrTemplateNotFound   = errs.E(errs.NotFound, "Sandbox template not found")
	ErrTemplateInUse      = errs.E(errs.Conflict, "Sandbox template is in use by sandboxes, laboratories or exams: delete or change them first")
	ErrTemplateNameTaken  = errs.E(errs.Conflict, "A sandbox template with this name exists")
	ErrNotRunning         = errs.E(errs.Conflict, "Container is not running: start it first")
	ErrNoEngineRuntime    = &errs.Error{Kind: errs.Unavailable, Detail: "This sandbox's template needs a container runtime the engine does not have: an operator installs it (runsc is gVisor's), or an admin sets the template's runtime to runc", RetryAfter: 30 * time.Second}
	ErrToolsMissing       = errs.E(errs.Unavailable, "The trusted tools image is not on this host: an operator must run ./scripts/build-images.sh tools")
	ErrNoDiskQuota        = errs.E(errs.Conflict, "This host's storage driver cannot limit a sandbox's disk space (overlay2 needs XFS mounted with pquota): set disk_mb to 0, or move the engine's storage")
)

// ErrNoMachines answers a machine template on a host without the machine
// driver: it says what an operator installs. Containers keep working.
var ErrNoMachines = &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Minute,
	Detail: "Machines are not available on this host: an operator installs QEMU (apt-get install qemu-system-x86 qemu-utils) and builds the machine image (./scripts/build-machine-image.sh), then restarts tuxlab; container sandboxes keep working"}

// ErrMachinesOnKubernetes answers a machine template when sandboxes run on
// Kubernetes: machines need the QEMU driver, which runs them on tuxlab's own
// host (docs/kubernetes.md says how KubeVirt could run them).
var ErrMachinesOnKubernetes = &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Hour,
	Detail: "Machines need the QEMU driver: this install runs sandboxes on Kubernetes (TUXLAB_SANDBOX_ENGINE=kubernetes), where machine templates are not available; container sandboxes keep working"}

// ErrUnsupported is what a driver answers for what its kind of sandbox
// cannot do yet (a machine's tools volume, changes or shared networks).
var ErrUnsupported = errs.E(errs.Conflict, "This kind of sandbox does not support this yet")

// Labels that tie every engine object to its row.
const (
	LabelManaged   = "org.tuxlab.managed"
	LabelInstance  = "org.tuxlab.instance"
	LabelContainer = "org.tuxlab.container-id"
	LabelUser      = "org.tuxlab.user-id"
	LabelTemplate  = "org.tuxlab.template-id"
	LabelDiskMB    = "org.tuxlab.disk-mb" // the writable-space limit the sandbox was created with
)

// ContainerFilter selects containers.
type ContainerFilter struct {
	UserID int64 // 0 for every user
	Status Status
	Offset int
	Limit  int // 0 for no limit
}

// Store keeps templates and containers. Missing rows are ErrTemplateNotFound or
// ErrContainerNotFound.
type Store interface {
	FindTemplates(ctx context.Context) ([]*Template, error)
	FindTemplateByID(ctx context.Context, id int64) (*Template, error)
	FindTemplateByName(ctx context.Context, name string) (*Template, error)
	CreateTemplate(ctx context.Context, t *Template) error
	UpdateTemplate(ctx context.Context, t *Template) error
	DeleteTemplate(ctx context.Context, id int64) error

	// CreateContainer inserts c after check passes, in one transaction that
	// serialises the user's creations, so a quota cannot be raced past.
	// check also gets the sandboxes running (or being created) on the whole
	// host, counted under a host-wide lock, so the host cap holds too.
	CreateContainer(ctx context.Context, c *Container, check func(existing []*Container, runningOnHost int) error) error
	FindContainerByID(ctx context.Context, id int64) (*Container, error)
	FindContainers(ctx context.Context, f ContainerFilter) ([]*Container, int, error)
	// UpdateContainer applies change to container id in one transaction.
	UpdateContainer(ctx context.Context, id int64, change func(c *Container) error) (*Container, error)
	// UpdateContainerOfUser is UpdateContainer with the user's other containers
	// in hand, serialised per user like CreateContainer, for quota checks.
	UpdateContainerOfUser(ctx context.Context, id int64, change func(c *Container, others []*Container, runningOnHost int) error) (*Container, error)
	DeleteContainer(ctx context.Context, id int64) error
	CountRunning(ctx context.Context) (int, error)
	// Setting, SetSettingIfAbsent, SetSetting and DeleteSetting keep
	// install-wide values, such as the instance id and the warm pools'
	// heartbeats.
	Setting(ctx context.Context, key string) (string, error)
	SetSettingIfAbsent(ctx context.Context, key, value string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
	DeleteSetting(ctx context.Context, key string) error
}
