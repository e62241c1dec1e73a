package lab

import (
	"context"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// Limits of a lab's fields.
const (
	MaxTasks          = 50
	MaxTextLen        = 20000 // descriptions, in characters
	MaxHintLen        = 2000
	MaxPoints         = 100
	MaxTimeLimit      = 600 // minutes
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
	Tasks                                     []TaskInput // nil: unchanged
}

// TaskInput is one task as an admin or a file gives it.
type TaskInput struct {
	Title       string `json:"title" yaml:"title"`
	Description string `json:"description" yaml:"description,omitempty"`
	Hint        string `json:"hint" yaml:"hint,omitempty"`
	Points      int    `json:"points" yaml:"points,omitempty"` // 0: the default, 1
	Check       string `json:"check" yaml:"check"`
}

// apply validates in and writes it onto l, collecting every problem.
func (in *Input) apply(l *Lab) error {
	var f errs.Fields
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&l.Slug, in.Slug)
	set(&l.Title, in.Title)
	set(&l.Description, in.Description)
	set(&l.Setup, in.Setup)
	set(&l.Solution, in.Solution)
	if in.ModuleID != nil {
		l.ModuleID = in.ModuleID
		if *in.ModuleID == 0 {
			l.ModuleID = nil
		}
	}
	if in.TemplateID != nil {
		l.TemplateID = *in.TemplateID
	}
	if in.TimeLimitMinutes != nil {
		l.TimeLimitMinutes = *in.TimeLimitMinutes
	}
	if in.PassingScore != nil {
		l.PassingScore = *in.PassingScore
	}
	lesson.CheckSlug(&f, []any{"slug"}, l.Slug)
	lesson.CheckTitle(&f, []any{"title"}, l.Title)
	checkLen(&f, []any{"description"}, l.Description, MaxTextLen)
	checkScript(&f, []any{"setup"}, l.Setup, false)
	checkScript(&f, []any{"solution"}, l.Solution, false)
	if l.TemplateID < 1 {
		f.Add([]any{"template_id"}, "Field required: the sandbox template the lab runs in", "missing")
	}
	if l.TimeLimitMinutes < 1 || l.TimeLimitMinutes > MaxTimeLimit {
		f.Add([]any{"time_limit_minutes"}, "Input should be between 1 and 600", "range")
	}
	if l.PassingScore < 0 || l.PassingScore > 100 {
		f.Add([]any{"passing_score"}, "Input should be between 0 and 100", "range")
	}
	if in.Tasks != nil {
		l.Tasks = mergeTasks(l.Tasks, in.Tasks)
	}
	switch {
	case len(l.Tasks) == 0:
		f.Add([]any{"tasks"}, "A laboratory needs at least one task", "too_short")
	case len(l.Tasks) > MaxTasks:
		f.Add([]any{"tasks"}, "A laboratory has at most 50 tasks", "too_long")
	}
	for i, t := range l.Tasks {
		if i >= MaxTasks {
			break
		}
		lesson.CheckTitle(&f, []any{"tasks", i, "title"}, t.Title)
		checkLen(&f, []any{"tasks", i, "description"}, t.Description, MaxTextLen)
		checkLen(&f, []any{"tasks", i, "hint"}, t.Hint, MaxHintLen)
		if t.Points < 1 || t.Points > MaxPoints {
			f.Add([]any{"tasks", i, "points"}, "Input should be between 1 and 100", "range")
		}
		checkScript(&f, []any{"tasks", i, "check"}, t.Check, true)
	}
	return f.Err()
}

// mergeTasks lays the new tasks over the old by position, so task ids stay.
func mergeTasks(old []*Task, in []TaskInput) []*Task {
	out := make([]*Task, len(in))
	for i, t := range in {
		n := &Task{Position: i, Title: t.Title, Description: t.Description, Hint: t.Hint, Points: t.Points, Check: t.Check}
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

func checkLen(f *errs.Fields, loc []any, s string, max int) {
	if utf8.RuneCountInString(s) > max {
		f.Add(loc, "Text is too long", "string_too_long")
	}
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

// Create adds a lab from an admin's input.
func (s *Service) Create(ctx context.Context, a actor.Actor, in Input) (*Lab, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	now := s.now()
	l := &Lab{TimeLimitMinutes: DefaultTimeLimit, PassingScore: DefaultPassing, CreatedAt: now, UpdatedAt: now}
	if err := in.apply(l); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, l); err != nil {
		return nil, err
	}
	if err := s.store.CreateLab(ctx, l); err != nil {
		return nil, err
	}
	return s.store.FindLabByID(ctx, l.ID)
}

// Update changes the fields given of lab id.
func (s *Service) Update(ctx context.Context, a actor.Actor, id int64, in Input) (*Lab, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	l, err := s.store.FindLabByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := in.apply(l); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, l); err != nil {
		return nil, err
	}
	l.UpdatedAt = s.now()
	if err := s.store.UpdateLab(ctx, l); err != nil {
		return nil, err
	}
	return s.store.FindLabByID(ctx, id)
}

// Delete removes a lab. With learners' attempts it needs cascade, which
// removes them too.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	return s.store.DeleteLab(ctx, id, cascade)
}

// checkReferences refuses a module or template that does not exist, naming the field.
func (s *Service) checkReferences(ctx context.Context, l *Lab) error {
	var f errs.Fields
	if l.ModuleID != nil {
		if _, err := s.store.ModuleSlugByID(ctx, *l.ModuleID); errs.Is(err, errs.NotFound) {
			f.Add([]any{"module_id"}, "No module with this id", "value_error")
		} else if err != nil {
			return err
		}
	}
	if _, err := s.store.TemplateNameByID(ctx, l.TemplateID); errs.Is(err, errs.NotFound) {
		f.Add([]any{"template_id"}, "No sandbox template with this id", "value_error")
	} else if err != nil {
		return err
	}
	return f.Err()
}
