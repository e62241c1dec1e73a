package lab

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/authored"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// Limits of a lab's fields.
const (
	MaxTasks          = 50
	MaxTextLen        = authored.MaxTextLen // descriptions, in characters
	MaxHintLen        = 2000
	MaxPoints         = 100
	MaxTimeLimit      = authored.MaxTimeLimit // minutes
	DefaultTimeLimit  = 60
	DefaultPassing    = 100
	MaxScriptBytes    = sandbox.MaxScriptBytes
	defaultTaskPoints = 1
)

// Input holds a lab's fields from an admin or a file. Nil fields keep their
// value (on create: take the default). Validation errors name the field:
// ["title"], ["tasks", 2, "check"].
type Input struct {
	Slug, Title, Description, Setup, Solution *string
	ModuleID                                  *int64 // 0 detaches the lab from its module
	TemplateID                                *int64
	TimeLimitMinutes, PassingScore            *int
	Machines                                  *[]Machine  // nil: unchanged; empty: one sandbox
	Tasks                                     []TaskInput // nil: unchanged
	Published                                 *bool
	OwnerID                                   *int64 // 0: the system; set by imports only, an author's create owns what it makes
}

// TaskInput is one task as an admin or a file gives it.
type TaskInput struct {
	Title       string `json:"title" yaml:"title"`
	Description string `json:"description" yaml:"description,omitempty"`
	Hint        string `json:"hint" yaml:"hint,omitempty"`
	Points      int    `json:"points" yaml:"points,omitempty"`             // 0: the default, 1
	Machine     string `json:"machine,omitempty" yaml:"machine,omitempty"` // labs with machines: where the check runs
	Check       string `json:"check" yaml:"check"`
}

// MaxMachines bounds a lab's machines: each runs whole, so a learner's
// quota of running sandboxes must hold them all.
const MaxMachines = 4

// machineName is a lab machine's name: a host name of one label.
var machineName = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,14}[a-z0-9])?$`)

// apply validates in and writes it onto l, collecting every problem.
func (in *Input) apply(l *Lab) error {
	var f errs.Fields
	authored.Set(&l.Slug, in.Slug)
	authored.Set(&l.Title, in.Title)
	authored.Set(&l.Description, in.Description)
	authored.Set(&l.Setup, in.Setup)
	authored.Set(&l.Solution, in.Solution)
	authored.SetRef(&l.ModuleID, in.ModuleID)
	authored.Set(&l.TemplateID, in.TemplateID)
	authored.Set(&l.TimeLimitMinutes, in.TimeLimitMinutes)
	authored.Set(&l.PassingScore, in.PassingScore)
	authored.Set(&l.Published, in.Published)
	authored.SetRef(&l.OwnerID, in.OwnerID)
	authored.CheckNames(&f, l.Slug, l.Title, l.Description)
	checkScript(&f, []any{"setup"}, l.Setup, false)
	checkScript(&f, []any{"solution"}, l.Solution, false)
	if l.TemplateID < 1 {
		f.Add([]any{"template_id"}, "Field required: the sandbox template the lab runs in", "missing")
	}
	authored.CheckLimits(&f, l.TimeLimitMinutes, l.PassingScore)
	if in.Machines != nil {
		l.Machines = slices.Clone(*in.Machines)
		if len(l.Machines) == 0 {
			l.Machines = nil // as stored: a lab of one sandbox
		}
	}
	checkMachines(&f, l)
	if in.Tasks != nil {
		l.Tasks = mergeTasks(l.Tasks, in.Tasks)
	}
	authored.CheckCount(&f, "tasks", len(l.Tasks), MaxTasks,
		"A laboratory needs at least one task", "A laboratory has at most 50 tasks")
	for i, t := range l.Tasks {
		if i >= MaxTasks {
			break
		}
		lesson.CheckTitle(&f, []any{"tasks", i, "title"}, t.Title)
		authored.CheckLen(&f, []any{"tasks", i, "description"}, t.Description, MaxTextLen)
		authored.CheckLen(&f, []any{"tasks", i, "hint"}, t.Hint, MaxHintLen)
		if t.Points < 1 || t.Points > MaxPoints {
			f.Add([]any{"tasks", i, "points"}, "Input should be between 1 and 100", "range")
		}
		checkScript(&f, []any{"tasks", i, "check"}, t.Check, true)
		switch {
		case len(l.Machines) == 0 && t.Machine != "":
			f.Add([]any{"tasks", i, "machine"}, "This laboratory has one sandbox: a task names no machine", "value_error")
		case len(l.Machines) > 0 && !slices.ContainsFunc(l.Machines, func(m Machine) bool { return m.Name == t.Machine }):
			f.Add([]any{"tasks", i, "machine"}, "Name one of the laboratory's machines, where the check runs", "value_error")
		}
	}
	return f.Err()
}

// checkMachines checks a lab's machines: 2 to MaxMachines, named as hosts,
// each name once, their scripts valid; with machines, the lab's own setup
// and solution are empty (each machine has its own).
func checkMachines(f *errs.Fields, l *Lab) {
	if len(l.Machines) == 0 {
		return
	}
	if len(l.Machines) < 2 || len(l.Machines) > MaxMachines {
		f.Add([]any{"machines"}, fmt.Sprintf("A laboratory has one sandbox (no machines) or 2 to %d machines", MaxMachines), "value_error")
	}
	seen := map[string]bool{}
	for i, m := range l.Machines {
		if !machineName.MatchString(m.Name) || seen[m.Name] {
			f.Add([]any{"machines", i, "name"}, "Each machine needs a name of its own: lower-case letters, digits and dashes, at most 16, such as server", "value_error")
		}
		seen[m.Name] = true
		checkScript(f, []any{"machines", i, "setup"}, m.Setup, false)
		checkScript(f, []any{"machines", i, "solution"}, m.Solution, false)
	}
	if l.Setup != "" {
		f.Add([]any{"setup"}, "A laboratory with machines has a setup on each machine instead", "value_error")
	}
	if l.Solution != "" {
		f.Add([]any{"solution"}, "A laboratory with machines has a solution on each machine instead", "value_error")
	}
}

// mergeTasks lays the new tasks over the old by position, so task ids stay.
func mergeTasks(old []*Task, in []TaskInput) []*Task {
	out := make([]*Task, len(in))
	for i, t := range in {
		n := &Task{Position: i, Title: t.Title, Description: t.Description, Hint: t.Hint, Points: t.Points, Check: t.Check, Machine: t.Machine}
		if n.Points == 0 {
			n.Points = defaultTaskPoints
		}
		if i < len(old) {
			n.ID = old[i].ID
		}
		out[i] = n
	}
	return out
}

func checkScript(f *errs.Fields, loc []any, s string, required bool) {
	switch {
	case required && len(s) == 0:
		f.Add(loc, "Field required: a script", "missing")
	case len(s) > MaxScriptBytes:
		f.Add(loc, "A script must be at most 64 KiB", "string_too_long")
	case !utf8.ValidString(s):
		f.Add(loc, "A script must be UTF-8 text", "value_error")
	case len(s) > 0 && sandbox.CheckInterpreter(s) != nil:
		f.Add(loc, sandbox.CheckInterpreter(s).Error(), "value_error")
	}
}

// kind is how labs are authored: the shared create, update, delete and
// import over this service's store.
func (s *Service) kind() authored.Kind[*Lab, Input] {
	return authored.Kind[*Lab, Input]{
		Names: s.store, Now: s.now,
		New:   func() *Lab { return &Lab{TimeLimitMinutes: DefaultTimeLimit, PassingScore: DefaultPassing} },
		Apply: func(in Input, l *Lab) error { return in.apply(l) },
		Copy: func(l *Lab) *Lab {
			c := *l
			c.Tasks = append([]*Task(nil), l.Tasks...)
			c.Machines = slices.Clone(l.Machines)
			return &c
		},
		ID:       func(l *Lab) int64 { return l.ID },
		Refs:     func(l *Lab) authored.Refs { return authored.Refs{ModuleID: l.ModuleID, TemplateID: &l.TemplateID} },
		Stamps:   func(l *Lab) authored.Stamps { return authored.Stamps{Created: &l.CreatedAt, Updated: &l.UpdatedAt} },
		Access:   func(l *Lab) *lesson.Access { return &l.Access },
		FindByID: s.store.FindLabByID, FindBySlug: s.store.FindLabBySlug, NotFound: ErrLabNotFound,
		Insert: s.store.CreateLab, Save: s.store.UpdateLab, Remove: s.store.DeleteLab,
	}
}

// Mine lists the labs a may change, drafts included: the authoring view.
func (s *Service) Mine(ctx context.Context, a actor.Actor) ([]*Lab, error) {
	all, err := s.store.FindLabs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	return s.kind().Mine(a, all)
}

// Authored returns lab id for its authoring view, when a may change it.
func (s *Service) Authored(ctx context.Context, a actor.Actor, id int64) (*Lab, error) {
	return s.kind().Get(ctx, a, id)
}

// Create adds a lab from an author's input, owned by a.
func (s *Service) Create(ctx context.Context, a actor.Actor, in Input) (*Lab, error) {
	return s.kind().Create(ctx, a, in)
}

// Update changes the fields given of lab id.
func (s *Service) Update(ctx context.Context, a actor.Actor, id int64, in Input) (*Lab, error) {
	return s.kind().Update(ctx, a, id, in)
}

// Delete removes a lab. With learners' attempts it needs cascade, which
// removes them too.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	return s.kind().Delete(ctx, a, id, cascade)
}
