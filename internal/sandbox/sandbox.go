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

// Template describes how to make a sandbox: image, limits and hardening.
type Template struct {
	ID          int64
	Name        string
	Description string
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
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Container is a learner's sandbox.
type Container struct {
	ID             int64
	UserID         int64
	TemplateID     int64
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

// Session is a running exec: its input and output, a terminal size, and its end.
type Session interface {
	io.ReadWriteCloser
	Resize(ctx context.Context, cols, rows uint) error
	// Wait returns the exit code once the command has ended.
	Wait(ctx context.Context) (int, error)
}

// Runtime is the container engine as tuxlab needs it. It is kept narrow so
// that a Kubernetes driver can implement it beside the Docker one. Methods
// return ErrRuntimeUnavailable when the engine cannot be reached and
// ErrGone when the container does not exist.
type Runtime interface {
	Ping(ctx context.Context) error
	ImageExists(ctx context.Context, image string) (bool, error)
	// EnsureNetwork makes an internal network (no route out of the host)
	// unless it exists; RemoveNetwork removes one nothing uses.
	EnsureNetwork(ctx context.Context, name string, labels map[string]string) error
	RemoveNetwork(ctx context.Context, name string) error
	// ProbeDiskQuota reports ErrNoDiskQuota when the engine's storage driver
	// cannot limit a container's writable layer (image: one that exists).
	ProbeDiskQuota(ctx context.Context, image string) error
	// DiskUsage returns the disk space each container of engineIDs takes
	// beyond its image, in bytes: its writable layer, counted in allocated
	// blocks where the engine allows (sparse files cost what they hold), and
	// the files its processes deleted but hold open. Containers that no
	// longer exist are left out. With an error it may still answer for some.
	DiskUsage(ctx context.Context, engineIDs []string) (map[string]int64, error)
	Create(ctx context.Context, s Spec) (engineID string, err error)
	Start(ctx context.Context, engineID string) error
	Stop(ctx context.Context, engineID string, grace time.Duration) error
	Remove(ctx context.Context, engineID string) error
	Inspect(ctx context.Context, engineID string) (State, error)
	List(ctx context.Context, labels map[string]string) ([]Instance, error)
	Exec(ctx context.Context, engineID string, s ExecSpec) (Session, error)
	// ToolsVolume returns the name of a volume holding the /tuxlab directory
	// of image (the trusted tools), made and filled once per image id. It
	// returns ErrToolsMissing when the image is not on the engine.
	ToolsVolume(ctx context.Context, image string) (string, error)
	// Changes lists the paths of a container's file system that differ from
	// its image: modified, added or deleted.
	Changes(ctx context.Context, engineID string) ([]Change, error)
	// Run runs a command without a TTY to its end: stdin is fed to it and
	// then closed, and its stdout and stderr are copied apart. It returns the
	// exit code. When ctx ends first, Run stops reading and returns ctx's error.
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
	ErrToolsMissing       = errs.E(errs.Unavailable, "The trusted tools image is not on this host: an operator must run ./scripts/build-images.sh tools")
	ErrNoDiskQuota        = errs.E(errs.Conflict, "This host's storage driver cannot limit a sandbox's disk space (overlay2 needs XFS mounted with pquota): set disk_mb to 0, or move the engine's storage")
)

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
