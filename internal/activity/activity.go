// Package activity records what learners do (a theme completed, a sandbox
// created, a lab or exam started, checked or submitted, a profile changed),
// each record written in the same transaction as the thing it records, and
// package dashboard reads them.
package activity

import (
	"context"
	"log/slog"
	"time"
)

// Kind is what a learner did.
type Kind string

// The kinds of activity.
const (
	ThemeCompleted  Kind = "theme_completed"
	SandboxCreated  Kind = "sandbox_created"
	LabStarted      Kind = "lab_started"
	LabChecked      Kind = "lab_checked"
	LabSubmitted    Kind = "lab_submitted"
	ExamStarted     Kind = "exam_started"
	ExamSubmitted   Kind = "exam_submitted"
	ProfileUpdated  Kind = "profile_updated"
	PasswordChanged Kind = "password_changed"
	AvatarChanged   Kind = "avatar_changed"
)

// Kinds lists every kind of activity.
var Kinds = []Kind{ThemeCompleted, SandboxCreated, LabStarted, LabChecked, LabSubmitted, ExamStarted, ExamSubmitted,
	ProfileUpdated, PasswordChanged, AvatarChanged}

// Event is one record of activity.
type Event struct {
	ID        int64
	UserID    int64
	Kind      Kind
	At        time.Time
	SubjectID int64  // the theme, sandbox, lab, exam or attempt it is about (0: none)
	Title     string // what a learner reads: the theme's or lab's title
	Score     *int   // for submissions
	Passed    *bool  // for submissions
	ModuleID  *int64 // the module a theme or lab belongs to, for per-module numbers
}

// Log is where domains record activity: Record writes in the transaction
// that InTx carries in ctx, so a domain's write and its record commit
// together or not at all.
type Log interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
	Record(ctx context.Context, e *Event) error
}

// Discard is a Log that keeps nothing (for tools and tests that need no
// records); InTx still runs fn.
var Discard Log = discard{}

type discard struct{}

func (discard) InTx(ctx context.Context, fn func(ctx context.Context) error) error { return fn(ctx) }
func (discard) Record(context.Context, *Event) error                               { return nil }

// Defaults fills what a domain's options leave unset: the clock (time.Now),
// the logger (slog.Default) and the activity log (Discard).
func Defaults(now *func() time.Time, log **slog.Logger, l *Log) {
	if *now == nil {
		*now = time.Now
	}
	if *log == nil {
		*log = slog.Default()
	}
	if *l == nil {
		*l = Discard
	}
}
