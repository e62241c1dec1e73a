// Package lab provides laboratories: practical tasks of a module (a
// "section"), each checked by a hidden script run as root inside the
// learner's sandbox. A learner starts an attempt (which provisions a sandbox
// from the lab's template and runs the lab's setup script), checks progress as
// often as the rate limit allows, and submits once. Scripts and solutions are
// for admins only; learners see titles, descriptions, hints, and per task
// whether it passed with the check's FAIL: reason.
package lab

import (
	"context"
	"time"

	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

// Lab is a laboratory.
type Lab struct {
	ID               int64
	Slug             string
	ModuleID         *int64 // the section it belongs to, if any
	TemplateID       int64  // the sandbox template it runs in
	Title            string
	Description      string // Markdown
	TimeLimitMinutes int
	PassingScore     int    // percent of points
	Setup            string // run as root in the fresh sandbox; admins only
	Solution         string // solves every task, run as the learner; admins only
	// Machines, when set, are the lab's several sandboxes (e.g. server and
	// client), each made from the template, on one private segment where
	// their names resolve; each has its own setup and solution, and each
	// task says which one its check runs on. Setup and Solution above are
	// then empty. A lab without Machines has one sandbox.
	Machines []Machine
	Tasks    []*Task
	lesson.Access
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Task is one thing a learner must get done.
type Task struct {
	ID          int64
	Position    int // 0-based order in the lab
	Title       string
	Description string // Markdown
	Hint        string
	Points      int
	Check       string // exit 0 means passed; admins only
	Machine     string // the machine the check runs on (labs with Machines); "" for the lab's one sandbox
}

// Machine is one of a lab's several sandboxes.
type Machine struct {
	Name     string `json:"name" yaml:"name"`                             // its host name, which the others resolve
	Setup    string `json:"setup,omitempty" yaml:"setup,omitempty"`       // run as root in it before the learner gets it; admins only
	Solution string `json:"solution,omitempty" yaml:"solution,omitempty"` // typed into its terminal as the learner; admins only
}

// AttemptMachine is one machine of an attempt and its sandbox.
type AttemptMachine struct {
	Name        string `json:"name"`
	ContainerID *int64 `json:"container_id"` // nil once removed
}

// MaxPoints is the sum of the tasks' points.
func (l *Lab) MaxPoints() int {
	n := 0
	for _, t := range l.Tasks {
		n += t.Points
	}
	return n
}

// Attempt is one learner's go at a lab.
type Attempt struct {
	attempt.Attempt
	LabID       int64
	ContainerID *int64 // the sandbox provisioned for it (a lab's first machine); nil once deleted
	// Machines are the sandboxes of a lab with several, in the lab's order
	// (the first is ContainerID too); empty for a lab with one sandbox.
	Machines    []AttemptMachine
	Results     []TaskResult
	Checks      int        // how many times the learner checked
	LastCheckAt *time.Time // when the last check ended
	// CheckingSince is when the check running now began; nil when none runs.
	// It is row state, so a second check is refused on every replica.
	CheckingSince *time.Time
	// SandboxRemovedAt is when the lab removed the sandbox of this ended
	// attempt, so that it stopped counting against the learner's quotas.
	SandboxRemovedAt *time.Time
}

// sandboxIDs are the ids of the attempt's sandboxes that still exist.
func (a *Attempt) sandboxIDs() []int64 {
	var ids []int64
	if a.ContainerID != nil {
		ids = append(ids, *a.ContainerID)
	}
	for _, m := range a.Machines {
		if m.ContainerID != nil && (a.ContainerID == nil || *m.ContainerID != *a.ContainerID) {
			ids = append(ids, *m.ContainerID)
		}
	}
	return ids
}

// TaskResult is how one task fared at a check or at submission.
type TaskResult struct {
	TaskID   int64    `json:"task_id"`
	Position int      `json:"position"`
	Title    string   `json:"title"`
	Passed   bool     `json:"passed"`
	Points   int      `json:"points"`   // earned
	Feedback []string `json:"feedback"` // the check's FAIL: lines, for the learner
	// For admins only.
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out"`
	Output   string `json:"output"`
}

// Errors of the lab domain.
var (
	ErrLabNotFound     = errs.E(errs.NotFound, "Laboratory not found")
	ErrAttemptNotFound = errs.E(errs.NotFound, "Attempt not found")
	ErrSlugTaken       = errs.E(errs.Conflict, "A laboratory with this slug exists")
	ErrModuleHasLab    = errs.E(errs.Conflict, "This module already has a laboratory")
	ErrNoOpenAttempt   = errs.E(errs.Conflict, "No attempt of this laboratory is in progress: start it first")
	ErrHasAttempts     = errs.E(errs.Conflict, "Learners have attempts of this laboratory: delete with cascade=true to remove them too")
)

// Filter selects labs.
type Filter struct {
	ModuleID *int64
}

// AttemptFilter selects attempts.
type AttemptFilter struct {
	UserID      int64
	WithSandbox bool // only attempts whose sandbox still exists
}

// Store keeps labs and attempts. Missing rows are ErrLabNotFound or
// ErrAttemptNotFound; a second open attempt of one user and lab is
// attempt.ErrOpen (its id found with FindOpenAttempt).
type Store interface {
	FindLabs(ctx context.Context, f Filter) ([]*Lab, error)
	FindLabByID(ctx context.Context, id int64) (*Lab, error)
	FindLabBySlug(ctx context.Context, slug string) (*Lab, error)
	// CreateLab inserts l and its tasks, setting their ids.
	CreateLab(ctx context.Context, l *Lab) error
	// UpdateLab stores l; tasks are matched by position, so their ids stay
	// while the lab keeps as many.
	UpdateLab(ctx context.Context, l *Lab) error
	// DeleteLab removes a lab; with attempts, only when cascade is set.
	DeleteLab(ctx context.Context, id int64, cascade bool) error
	CountAttempts(ctx context.Context, labID int64) (int, error)

	// CreateAttempt inserts a once allow accepts the start times of the
	// user's attempts of the same lab since the given time. The user's row is
	// locked meanwhile, so concurrent starts are counted one after the other;
	// allow's error is returned as is.
	CreateAttempt(ctx context.Context, a *Attempt, since time.Time, allow func(started []time.Time) error) error
	FindAttemptByID(ctx context.Context, id int64) (*Attempt, error)
	FindOpenAttempt(ctx context.Context, labID, userID int64) (*Attempt, error)
	// FindAttempts returns the attempts f selects, oldest first.
	FindAttempts(ctx context.Context, f AttemptFilter) ([]*Attempt, error)
	// UpdateAttempt applies change to attempt id in one transaction, the row locked.
	UpdateAttempt(ctx context.Context, id int64, change func(a *Attempt) error) (*Attempt, error)
	DeleteAttempt(ctx context.Context, id int64) error

	// Names the files use, resolved to ids.
	ModuleIDBySlug(ctx context.Context, slug string) (int64, error)
	ModuleSlugByID(ctx context.Context, id int64) (string, error)
	// ModuleOwnerByID returns the owner of module id (nil: the system).
	ModuleOwnerByID(ctx context.Context, id int64) (*int64, error)
	// UserIDByName and UserNameByID resolve the owners files name.
	UserIDByName(ctx context.Context, username string) (int64, error)
	UserNameByID(ctx context.Context, id int64) (string, error)
	TemplateIDByName(ctx context.Context, name string) (int64, error)
	TemplateNameByID(ctx context.Context, id int64) (string, error)
}
