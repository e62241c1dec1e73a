package sandbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"tuxlab/internal/errs"
)

// AllowedCapabilities are the capabilities a template may keep. Everything
// else (SYS_ADMIN, NET_ADMIN, SYS_PTRACE, SYS_MODULE, ...) would let a learner
// reach past the container, so no template can ask for it.
var AllowedCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL",
	"NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// DefaultTemplates are seeded into a database without them. Their settings
// are documented in docs/sandboxes.md.
func DefaultTemplates() []*Template {
	return []*Template{
		{
			Name:        "Debian",
			Kind:        KindContainer,
			Description: "Debian 12 (bookworm) with bash, coreutils, procps, iproute2, systemd tools, cron, acl, man pages and editors. You are the user learner, with passwordless sudo.",
			Image:       "tuxlab/sandbox-debian:latest",
			MemoryMB:    512, CPUMillis: 1000, PidsLimit: 256,
			User: "learner", Shell: []string{"/bin/bash", "-l"},
			// sudo is setuid: it needs no-new-privileges off, and SETUID/SETGID
			// (to switch user), AUDIT_WRITE (it logs to the audit socket), and the
			// file capabilities root normally has, so root inside can administer files.
			CapAdd:          []string{"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"},
			NoNewPrivileges: false,
		},
		{
			Name:        "BusyBox",
			Kind:        KindContainer,
			Description: "A tiny BusyBox shell that starts in a blink. No sudo, no network: good for a first look at the command line.",
			Image:       "tuxlab/sandbox-busybox:latest",
			MemoryMB:    64, CPUMillis: 500, PidsLimit: 64,
			User: "learner", Shell: []string{"/bin/sh", "-l"},
			CapAdd:          []string{},
			NoNewPrivileges: true,
		},
		{
			Name: MachineTemplateName,
			Kind: KindMachine,
			Description: "A whole Debian 12 machine: its own kernel, systemd as PID 1, two blank 1 GiB disks (vdb, vdc) " +
				"and a reboot, for storage, boot, firewall and kernel work. You are the user learner, with passwordless sudo. " +
				"It takes longer to start than a container.",
			Image:    "current",
			MemoryMB: 512, CPUMillis: 1000, PidsLimit: 4096, DiskMB: 4096,
			ExtraDisksMB: []int{1024, 1024},
			User:         "learner", Shell: []string{"/bin/bash", "-l"},
			CapAdd: []string{},
		},
	}
}

// MachineTemplateName is the bundled machine template's name.
const MachineTemplateName = "Debian machine"

// EnsureDefaultTemplates inserts each default template whose name is absent.
func (s *Service) EnsureDefaultTemplates(ctx context.Context) error {
	for _, t := range DefaultTemplates() {
		if _, err := s.store.FindTemplateByName(ctx, t.Name); err == nil {
			continue
		} else if !errors.Is(err, ErrTemplateNotFound) {
			return err
		}
		now := s.now()
		t.CreatedAt, t.UpdatedAt = now, now
		if err := s.store.CreateTemplate(ctx, t); err != nil && !errors.Is(err, ErrTemplateNameTaken) {
			return err
		}
	}
	return nil
}

// TemplateInput holds template fields from an admin; nil fields keep their
// value (on create: take the default).
type TemplateInput struct {
	Name, Description, Image, Runtime, User *string
	MemoryMB, CPUMillis, PidsLimit, DiskMB  *int
	Network, NoNewPrivileges                *bool
	Shell                                   *[]string
	CapAdd                                  *[]string
	Kind                                    *string
	ExtraDisksMB                            *[]int
}

var (
	imagePattern = regexp.MustCompile(`^[a-z0-9]+([._/:@-][a-zA-Z0-9]+)*$`)
	userPattern  = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
)

// apply validates in and applies it to t; problems are located by field name.
func (in TemplateInput) apply(t *Template) error {
	var f errs.Fields
	loc := func(name string) []any { return []any{name} }
	if in.Name != nil {
		if n := utf8.RuneCountInString(strings.TrimSpace(*in.Name)); n < 1 || n > 64 {
			f.Add(loc("name"), "Name must be 1 to 64 characters", "string_length")
		}
		t.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 1000 {
			f.Add(loc("description"), "Description must be at most 1000 characters", "string_too_long")
		}
		t.Description = *in.Description
	}
	if in.Image != nil {
		if len(*in.Image) > 255 || !imagePattern.MatchString(*in.Image) {
			f.Add(loc("image"), "Image must be an image reference such as registry.example.org/team/image:tag", "value_error")
		}
		t.Image = *in.Image
	}
	if in.Runtime != nil {
		if *in.Runtime != "" && *in.Runtime != "runc" && *in.Runtime != "runsc" {
			f.Add(loc("runtime"), "Runtime must be empty (the engine's default), runc or runsc", "enum")
		}
		t.Runtime = *in.Runtime
	}
	if in.User != nil {
		if !userPattern.MatchString(*in.User) {
			f.Add(loc("user"), "User must be a Linux user name", "value_error")
		}
		t.User = *in.User
	}
	ranged := func(name string, v *int, dst *int, lo, hi int) {
		if v == nil {
			return
		}
		if *v < lo || *v > hi {
			f.Add(loc(name), name+" must be between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi), "range")
		}
		*dst = *v
	}
	ranged("memory_mb", in.MemoryMB, &t.MemoryMB, 16, 65536)
	ranged("cpu_millis", in.CPUMillis, &t.CPUMillis, 50, 64000)
	ranged("pids_limit", in.PidsLimit, &t.PidsLimit, 16, 32768)
	ranged("disk_mb", in.DiskMB, &t.DiskMB, 0, 1<<20)
	if in.Network != nil {
		t.Network = *in.Network
	}
	if in.NoNewPrivileges != nil {
		t.NoNewPrivileges = *in.NoNewPrivileges
	}
	if in.Shell != nil {
		if len(*in.Shell) == 0 || len(*in.Shell) > 8 || !strings.HasPrefix((*in.Shell)[0], "/") {
			f.Add(loc("shell"), "Shell must be an absolute command with at most 7 arguments, such as /bin/bash -l", "value_error")
		}
		t.Shell = *in.Shell
	}
	if in.Kind != nil {
		switch k := Kind(*in.Kind); k {
		case KindContainer, KindMachine:
			t.Kind = k
		default:
			f.Add(loc("kind"), "Kind must be container or machine", "enum")
		}
	}
	if in.ExtraDisksMB != nil {
		t.ExtraDisksMB = *in.ExtraDisksMB
	}
	if in.CapAdd != nil {
		for _, c := range *in.CapAdd {
			if !slices.Contains(AllowedCapabilities, c) {
				f.Add(loc("cap_add"), "Capability "+c+" is not allowed; allowed: "+strings.Join(AllowedCapabilities, ", "), "enum")
			}
		}
		t.CapAdd = *in.CapAdd
	}
	return f.Err()
}

// CreateTemplate validates and stores a new template; name and image are required.
func (s *Service) CreateTemplate(ctx context.Context, in TemplateInput) (*Template, error) {
	var f errs.Fields
	if in.Name == nil {
		f.Add([]any{"name"}, "Field required", "missing")
	}
	if in.Image == nil {
		f.Add([]any{"image"}, "Field required", "missing")
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	now := s.now()
	t := &Template{Kind: KindContainer, MemoryMB: 512, CPUMillis: 1000, PidsLimit: 256, User: "learner", Shell: []string{"/bin/sh", "-l"},
		CapAdd: []string{}, NoNewPrivileges: true, CreatedAt: now, UpdatedAt: now}
	if err := in.apply(t); err != nil {
		return nil, err
	}
	if err := s.checkKind(t); err != nil {
		return nil, err
	}
	if err := s.store.CreateTemplate(ctx, t); err != nil {
		return nil, err
	}
	s.pool.poke()
	return t, nil
}

// UpdateTemplate validates and applies the fields given. Running sandboxes keep
// the settings they were created with.
func (s *Service) UpdateTemplate(ctx context.Context, id int64, in TemplateInput) (*Template, error) {
	t, err := s.store.FindTemplateByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := in.apply(t); err != nil {
		return nil, err
	}
	if err := s.checkKind(t); err != nil {
		return nil, err
	}
	t.UpdatedAt = s.now()
	if err := s.store.UpdateTemplate(ctx, t); err != nil {
		return nil, err
	}
	s.pool.poke() // the warm pool replaces what it made with the old settings
	return t, nil
}

// DeleteTemplate removes a template no container uses.
func (s *Service) DeleteTemplate(ctx context.Context, id int64) error {
	if err := s.store.DeleteTemplate(ctx, id); err != nil {
		return err
	}
	s.pool.poke()
	return nil
}

// MachineLimits bound what a machine template may ask for: every machine
// takes its memory from the host whole, and its disks from the host's disk
// as it writes them.
type MachineLimits struct {
	MaxMemoryMB int // a machine's memory (default 2048)
	MaxCPUs     int // its virtual CPUs (default: the host's cores)
	MaxDisks    int // its blank disks (default 4)
	MaxDiskMB   int // each blank disk (default 8192)
	MaxRootMB   int // its root disk (default 16384)
	MinMemoryMB int // below this a Debian machine does not boot (256)
	MinRootMB   int // the machine image's own size and some room (2048)
	DefaultRoot int // a root disk_mb of 0 means this (4096)
}

func (l *MachineLimits) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxMemoryMB, 2048)
	def(&l.MaxCPUs, runtime.NumCPU())
	def(&l.MaxDisks, 4)
	def(&l.MaxDiskMB, 8192)
	def(&l.MaxRootMB, 16384)
	def(&l.MinMemoryMB, 256)
	def(&l.MinRootMB, 2048)
	def(&l.DefaultRoot, 4096)
}

// checkKind checks what depends on t's kind once every field is applied: a
// machine's memory, CPUs and disks within the host's MachineLimits, and
// nothing a machine cannot honour (gVisor); a container has no blank disks.
func (s *Service) checkKind(t *Template) error {
	var f errs.Fields
	loc := func(name string) []any { return []any{name} }
	if t.Kind == "" {
		t.Kind = KindContainer
	}
	if t.Kind != KindMachine {
		if len(t.ExtraDisksMB) > 0 {
			f.Add(loc("extra_disks_mb"), "Only machines have blank disks: set kind=machine, or no extra_disks_mb", "value_error")
		}
		return f.Err()
	}
	l := s.opt.MachineLimits
	if t.MemoryMB < l.MinMemoryMB || t.MemoryMB > l.MaxMemoryMB {
		f.Add(loc("memory_mb"), fmt.Sprintf("A machine's memory_mb must be between %d and %d on this host", l.MinMemoryMB, l.MaxMemoryMB), "range")
	}
	if t.CPUMillis%1000 != 0 || t.CPUMillis < 1000 || t.CPUMillis > l.MaxCPUs*1000 {
		f.Add(loc("cpu_millis"), fmt.Sprintf("A machine has whole virtual CPUs: cpu_millis must be 1000 to %d in steps of 1000 on this host", l.MaxCPUs*1000), "range")
	}
	if t.DiskMB != 0 && (t.DiskMB < l.MinRootMB || t.DiskMB > l.MaxRootMB) {
		f.Add(loc("disk_mb"), fmt.Sprintf("A machine's root disk_mb must be 0 (%d) or between %d and %d", l.DefaultRoot, l.MinRootMB, l.MaxRootMB), "range")
	}
	if len(t.ExtraDisksMB) > l.MaxDisks {
		f.Add(loc("extra_disks_mb"), fmt.Sprintf("A machine has at most %d blank disks", l.MaxDisks), "too_long")
	}
	for _, mb := range t.ExtraDisksMB {
		if mb < 16 || mb > l.MaxDiskMB {
			f.Add(loc("extra_disks_mb"), fmt.Sprintf("Each blank disk must be between 16 and %d MiB", l.MaxDiskMB), "range")
			break
		}
	}
	if t.Runtime != "" && t.Runtime != "runc" {
		f.Add(loc("runtime"), "A machine has no container runtime: leave runtime empty", "value_error")
	}
	if len(t.Image) > 64 || !machineImagePattern.MatchString(t.Image) {
		f.Add(loc("image"), "A machine's image names a machine image built by scripts/build-machine-image.sh, such as current", "value_error")
	}
	return f.Err()
}

var machineImagePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
