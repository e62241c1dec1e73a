package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"tuxlab/internal/activity"

	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Sandboxes is what labs need of the sandbox service.
type Sandboxes interface {
	Create(ctx context.Context, a sandbox.Actor, n sandbox.NewContainer) (*sandbox.Container, error)
	Get(ctx context.Context, a sandbox.Actor, id int64) (*sandbox.Container, error)
	Start(ctx context.Context, a sandbox.Actor, id int64) (*sandbox.Container, error)
	Delete(ctx context.Context, a sandbox.Actor, id int64) error
	ExecIn(ctx context.Context, c *sandbox.Container, scripts ...sandbox.Script) ([]*sandbox.Result, error)
	// CheckIn runs checks only in a sandbox whose system files were not
	// tampered with; otherwise each result fails with the reason.
	CheckIn(ctx context.Context, c *sandbox.Container, checks ...sandbox.Script) ([]*sandbox.Result, error)
}

// Options tune a Service. Zero values take the defaults.
type Options struct {
	CheckInterval time.Duration // at most one check per attempt this often (default 5s)
	CheckTimeout  time.Duration // one task's check (default 10s)
	SetupTimeout  time.Duration // the setup script (default 60s)
	Now           func() time.Time
	Log           *slog.Logger
	Activity      activity.Log // records starts, checks and submissions with their rows (default: none)
}

func (o *Options) defaults() {
	if o.CheckInterval <= 0 {
		o.CheckInterval = 5 * time.Second
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 10 * time.Second
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = 60 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Activity == nil {
		o.Activity = activity.Discard
	}
}

// Service is the laboratory domain.
type Service struct {
	store     Store
	sandboxes Sandboxes
	opt       Options
}

// NewService returns a Service.
func NewService(store Store, sandboxes Sandboxes, o Options) *Service {
	o.defaults()
	return &Service{store: store, sandboxes: sandboxes, opt: o}
}

func (s *Service) now() time.Time { return s.opt.Now().UTC().Truncate(time.Microsecond) }

// Labs lists every lab, by id.
func (s *Service) Labs(ctx context.Context) ([]*Lab, error) { return s.store.FindLabs(ctx, Filter{}) }

// Lab returns one lab. The caller decides what of it to show.
func (s *Service) Lab(ctx context.Context, id int64) (*Lab, error) {
	return s.store.FindLabByID(ctx, id)
}

// LabOfModule returns the laboratory of a module (a section).
func (s *Service) LabOfModule(ctx context.Context, moduleID int64) (*Lab, error) {
	labs, err := s.store.FindLabs(ctx, Filter{ModuleID: &moduleID})
	if err != nil {
		return nil, err
	}
	if len(labs) == 0 {
		return nil, errs.E(errs.NotFound, "This section has no laboratory")
	}
	return labs[0], nil
}

// Start begins an attempt for the actor: it inserts the attempt (one open
// attempt per learner and lab, enforced by the store), provisions a sandbox
// from the lab's template and runs the lab's setup in it as root. If any step
// fails, nothing is left behind.
func (s *Service) Start(ctx context.Context, a sandbox.Actor, labID int64) (*Attempt, error) {
	l, err := s.store.FindLabByID(ctx, labID)
	if err != nil {
		return nil, err
	}
	if open, err := s.openAttempt(ctx, l.ID, a.UserID); err != nil {
		return nil, err
	} else if open != nil {
		return nil, attempt.OpenError(&open.Attempt)
	}
	now := s.now()
	at := &Attempt{Attempt: attempt.Attempt{UserID: a.UserID, Status: attempt.InProgress, StartedAt: now,
		ExpiresAt: now.Add(time.Duration(l.TimeLimitMinutes) * time.Minute), MaxPoints: l.MaxPoints()}, LabID: l.ID}
	if err := s.store.CreateAttempt(ctx, at); errors.Is(err, attempt.ErrOpen) {
		if open, _ := s.store.FindOpenAttempt(ctx, l.ID, a.UserID); open != nil {
			return nil, attempt.OpenError(&open.Attempt)
		}
		return nil, err
	} else if err != nil {
		return nil, err
	}
	c, err := s.provision(ctx, a, l)
	if err != nil {
		if derr := s.store.DeleteAttempt(context.WithoutCancel(ctx), at.ID); derr != nil {
			s.opt.Log.Warn("could not delete a failed lab attempt", "attempt_id", at.ID, "error", derr.Error())
		}
		return nil, err
	}
	return s.record(ctx, l, at.ID, activity.LabStarted, func(at *Attempt) { at.ContainerID = &c.ID })
}

// record applies change to attempt id and records what the learner did, in
// one transaction.
func (s *Service) record(ctx context.Context, l *Lab, id int64, kind activity.Kind, change func(*Attempt)) (*Attempt, error) {
	var out *Attempt
	err := s.opt.Activity.InTx(ctx, func(ctx context.Context) error {
		at, err := s.store.UpdateAttempt(ctx, id, func(at *Attempt) error { change(at); return nil })
		if err != nil {
			return err
		}
		e := &activity.Event{UserID: at.UserID, Kind: kind, At: s.now(), SubjectID: l.ID, Title: l.Title, ModuleID: l.ModuleID}
		if kind == activity.LabSubmitted {
			e.Score, e.Passed = &at.Score, &at.Passed
		}
		out = at
		return s.opt.Activity.Record(ctx, e)
	})
	return out, err
}

// provision makes the attempt's sandbox and runs the setup script in it.
func (s *Service) provision(ctx context.Context, a sandbox.Actor, l *Lab) (*sandbox.Container, error) {
	c, err := s.sandboxes.Create(ctx, a, sandbox.NewContainer{TemplateID: l.TemplateID, Name: truncate("Lab: "+l.Title, sandbox.MaxNameLen)})
	if errs.Is(err, errs.Invalid) {
		// The lab names a template that is gone: the lab's fault, not the learner's.
		return nil, errs.E(errs.Conflict, "This laboratory's sandbox template is missing: an admin must fix the laboratory")
	}
	if err != nil {
		return nil, err
	}
	if l.Setup == "" {
		return c, nil
	}
	ran, err := s.sandboxes.ExecIn(ctx, c, sandbox.Script{Text: l.Setup, AsRoot: true, Timeout: s.opt.SetupTimeout})
	if err == nil && !ran[0].OK() {
		s.opt.Log.Error("laboratory setup failed", "lab_id", l.ID, "result", ran[0].String(), "stderr", ran[0].Stderr)
		err = &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Minute,
			Detail: "This laboratory could not be prepared (its setup failed): try again later, and tell an admin if it persists"}
	}
	if err != nil {
		if derr := s.sandboxes.Delete(context.WithoutCancel(ctx), a, c.ID); derr != nil {
			s.opt.Log.Warn("could not delete the sandbox of a failed lab start", "container_id", c.ID, "error", derr.Error())
		}
		return nil, err
	}
	return c, nil
}

// openAttempt returns the actor's open attempt of a lab, or nil. An attempt
// whose deadline passed is ended as expired on the way.
func (s *Service) openAttempt(ctx context.Context, labID, userID int64) (*Attempt, error) {
	open, err := s.store.FindOpenAttempt(ctx, labID, userID)
	if errors.Is(err, ErrAttemptNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if open.Status == attempt.InProgress && !s.now().Before(open.ExpiresAt) {
		_, err := s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error { at.ExpireIfDue(s.now()); return nil })
		return nil, err
	}
	return open, nil
}

// Check runs every task's check in the actor's open attempt now, without
// ending it, so the learner sees which tasks already pass. Checks are rate
// limited per attempt (429 with Retry-After).
func (s *Service) Check(ctx context.Context, a sandbox.Actor, labID int64) (*Attempt, error) {
	l, err := s.store.FindLabByID(ctx, labID)
	if err != nil {
		return nil, err
	}
	open, err := s.store.FindOpenAttempt(ctx, l.ID, a.UserID)
	if errors.Is(err, ErrAttemptNotFound) {
		return nil, ErrNoOpenAttempt
	}
	if err != nil {
		return nil, err
	}
	var refusal error
	now := s.now()
	open, err = s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error {
		switch {
		case at.ExpireIfDue(now):
			refusal = attempt.ErrExpired
		case at.Status == attempt.Grading:
			refusal = attempt.ErrGrading
		case at.Status != attempt.InProgress:
			refusal = attempt.ErrFinished
		case at.LastCheckAt != nil && now.Sub(*at.LastCheckAt) < s.opt.CheckInterval:
			wait := s.opt.CheckInterval - now.Sub(*at.LastCheckAt)
			refusal = &errs.Error{Kind: errs.TooManyRequests, RetryAfter: wait,
				Detail: fmt.Sprintf("Checked a moment ago: check again in %d s", int(wait.Seconds()+0.999))}
		default:
			at.LastCheckAt = &now
			at.Checks++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	c, err := s.attemptSandbox(ctx, a, open)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errs.E(errs.Conflict, "This attempt's sandbox no longer exists: submit to end the attempt, then start the laboratory again")
	}
	results, _, err := s.runChecks(ctx, l, c)
	if err != nil {
		return nil, err
	}
	return s.record(ctx, l, open.ID, activity.LabChecked, func(at *Attempt) { at.Results = results })
}

// Submit runs every task's check, ends the attempt and grades it, once: of
// concurrent submits one grades and the others get 409. A submit after the
// deadline is 409 and ends the attempt as expired.
func (s *Service) Submit(ctx context.Context, a sandbox.Actor, labID int64) (*Attempt, error) {
	l, err := s.store.FindLabByID(ctx, labID)
	if err != nil {
		return nil, err
	}
	open, err := s.store.FindOpenAttempt(ctx, l.ID, a.UserID)
	if errors.Is(err, ErrAttemptNotFound) {
		return nil, ErrNoOpenAttempt
	}
	if err != nil {
		return nil, err
	}
	var refusal error
	if _, err = s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error {
		refusal = at.Claim(s.now())
		return nil
	}); err != nil {
		return nil, err
	}
	if refusal != nil {
		return nil, refusal
	}
	results, points, err := s.grade(ctx, a, l, open)
	if err != nil {
		s.store.UpdateAttempt(context.WithoutCancel(ctx), open.ID, func(at *Attempt) error { at.Release(); return nil })
		return nil, err
	}
	return s.record(ctx, l, open.ID, activity.LabSubmitted, func(at *Attempt) {
		at.Results = results
		at.Finish(s.now(), points, l.MaxPoints(), l.PassingScore)
	})
}

// grade runs the checks of a claimed attempt. A sandbox that no longer
// exists fails every task rather than keeping the attempt open for good.
func (s *Service) grade(ctx context.Context, a sandbox.Actor, l *Lab, at *Attempt) ([]TaskResult, int, error) {
	c, err := s.attemptSandbox(ctx, a, at)
	if err != nil {
		return nil, 0, err
	}
	if c == nil {
		results := make([]TaskResult, len(l.Tasks))
		for i, t := range l.Tasks {
			results[i] = TaskResult{TaskID: t.ID, Position: t.Position, Title: t.Title, ExitCode: -1,
				Feedback: []string{"The sandbox of this attempt no longer exists"}}
		}
		return results, 0, nil
	}
	return s.runChecks(ctx, l, c)
}

// attemptSandbox returns the attempt's sandbox, started if it was stopped
// (the idle stop may have stopped it), or nil when it no longer exists.
func (s *Service) attemptSandbox(ctx context.Context, a sandbox.Actor, at *Attempt) (*sandbox.Container, error) {
	if at.ContainerID == nil {
		return nil, nil
	}
	owner := sandbox.Actor{UserID: at.UserID}
	c, err := s.sandboxes.Get(ctx, owner, *at.ContainerID)
	if errors.Is(err, sandbox.ErrContainerNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	switch c.Status {
	case sandbox.StatusRunning:
		return c, nil
	case sandbox.StatusStopped:
		return s.sandboxes.Start(ctx, owner, c.ID)
	}
	return nil, nil // broken: as good as gone
}

// runChecks runs each task's check in c and returns the results and points.
func (s *Service) runChecks(ctx context.Context, l *Lab, c *sandbox.Container) ([]TaskResult, int, error) {
	checks := make([]sandbox.Script, len(l.Tasks))
	for i, t := range l.Tasks {
		checks[i] = sandbox.Script{Text: t.Check, AsRoot: true, Timeout: s.opt.CheckTimeout, OutputCap: checkOutputCap}
	}
	ran, err := s.sandboxes.CheckIn(ctx, c, checks...)
	if err != nil {
		return nil, 0, err
	}
	results := make([]TaskResult, len(l.Tasks))
	points := 0
	for i, t := range l.Tasks {
		res := ran[i]
		passed, feedback := res.Verdict()
		r := TaskResult{TaskID: t.ID, Position: t.Position, Title: t.Title, Passed: passed, Feedback: feedback,
			ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: res.Transcript()}
		if passed {
			r.Points = t.Points
			points += t.Points
		}
		results[i] = r
	}
	return results, points, nil
}

// Results returns an attempt for its owner (or an admin); another user's is
// ErrAttemptNotFound. An in-progress attempt past its deadline is ended as
// expired on the way.
func (s *Service) Results(ctx context.Context, a sandbox.Actor, id int64) (*Attempt, *Lab, error) {
	at, err := s.store.FindAttemptByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if at.UserID != a.UserID && !a.Admin {
		return nil, nil, ErrAttemptNotFound
	}
	if at.Status == attempt.InProgress && !s.now().Before(at.ExpiresAt) {
		if at, err = s.store.UpdateAttempt(ctx, at.ID, func(at *Attempt) error { at.ExpireIfDue(s.now()); return nil }); err != nil {
			return nil, nil, err
		}
	}
	l, err := s.store.FindLabByID(ctx, at.LabID)
	return at, l, err
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// checkOutputCap bounds what is kept of each stream of a check, for admins.
const checkOutputCap = 16 << 10
