package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Sandboxes is what labs need of the sandbox service.
type Sandboxes interface {
	attempt.Sandboxes
	ExecIn(ctx context.Context, c *sandbox.Container, scripts ...sandbox.Script) ([]*sandbox.Result, error)
	// CheckInBudget runs checks, bounded as a whole by b, only in a sandbox
	// whose system files were not tampered with; otherwise each result
	// fails with the reason.
	CheckInBudget(ctx context.Context, c *sandbox.Container, b sandbox.Budget, checks ...sandbox.Script) ([]*sandbox.Result, error)
}

// Options tune a Service. Zero values take the defaults.
type Options struct {
	// CheckInterval is the least time from the end of one check of an
	// attempt to the start of the next (default 5s).
	CheckInterval time.Duration
	CheckTimeout  time.Duration // one task's check (default 10s)
	// CheckBudget bounds the wall time of a whole check, every task of it
	// (default 30s): tasks left when it is spent fail as not checked.
	CheckBudget time.Duration
	// AttemptsPerDay bounds the attempts a learner starts of one lab in any
	// 24 hours (default 10).
	AttemptsPerDay int
	SetupTimeout   time.Duration // the setup script (default 60s)
	Now            func() time.Time
	Log            *slog.Logger
	Activity       activity.Log // records starts, checks and submissions with their rows (default: none)
}

func (o *Options) defaults() {
	if o.CheckInterval <= 0 {
		o.CheckInterval = 5 * time.Second
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 10 * time.Second
	}
	if o.CheckBudget <= 0 {
		o.CheckBudget = 30 * time.Second
	}
	if o.AttemptsPerDay <= 0 {
		o.AttemptsPerDay = 10
	}
	if o.SetupTimeout <= 0 {
		o.SetupTimeout = 60 * time.Second
	}
	activity.Defaults(&o.Now, &o.Log, &o.Activity)
}

// Service is the laboratory domain.
type Service struct {
	store     Store
	sandboxes Sandboxes
	opt       Options
	attempts  attempt.Rows[Attempt, *Attempt]
}

// NewService returns a Service.
func NewService(store Store, sandboxes Sandboxes, o Options) *Service {
	o.defaults()
	s := &Service{store: store, sandboxes: sandboxes, opt: o}
	// An attempt that ends on the way loses its sandbox.
	s.attempts = attempt.Rows[Attempt, *Attempt]{Store: store, NotFound: ErrAttemptNotFound, Now: s.now, Ended: s.removeSandbox}
	return s
}

func (s *Service) now() time.Time { return s.opt.Now().UTC().Truncate(time.Microsecond) }

// Labs lists every published lab, by id: what learners see.
func (s *Service) Labs(ctx context.Context) ([]*Lab, error) {
	all, err := s.store.FindLabs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	return s.kind().Published(all), nil
}

// Lab returns one published lab; a draft is ErrLabNotFound. The caller
// decides what of it to show.
func (s *Service) Lab(ctx context.Context, id int64) (*Lab, error) {
	return s.labFor(ctx, actor.Actor{}, id)
}

// labFor returns lab id when a sees it: published, or a may change it.
func (s *Service) labFor(ctx context.Context, a actor.Actor, id int64) (*Lab, error) {
	l, err := s.store.FindLabByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !l.VisibleTo(a) {
		return nil, ErrLabNotFound
	}
	return l, nil
}

// LabOfModule returns the laboratory of a module (a section) when a sees it.
func (s *Service) LabOfModule(ctx context.Context, a actor.Actor, moduleID int64) (*Lab, error) {
	labs, err := s.store.FindLabs(ctx, Filter{ModuleID: &moduleID})
	if err != nil {
		return nil, err
	}
	if len(labs) == 0 || !labs[0].VisibleTo(a) {
		return nil, errs.E(errs.NotFound, "This section has no laboratory")
	}
	return labs[0], nil
}

// Start begins an attempt for the actor: it inserts the attempt (one open
// attempt per learner and lab, at most AttemptsPerDay starts of the lab in 24
// hours, both enforced by the store), removes the sandboxes of the learner's
// ended lab attempts so that they no longer count against the sandbox quotas,
// provisions a sandbox from the lab's template and runs the lab's setup in it
// as root. If any step fails, nothing of the new attempt is left behind.
func (s *Service) Start(ctx context.Context, a actor.Actor, labID int64) (*Attempt, error) {
	l, err := s.labFor(ctx, a, labID)
	if err != nil {
		return nil, err
	}
	if open, err := s.attempts.FindOpen(ctx, l.ID, a.UserID); err != nil {
		return nil, err
	} else if open != nil {
		return nil, attempt.OpenError(&open.Attempt)
	}
	now := s.now()
	at := &Attempt{Attempt: attempt.Attempt{UserID: a.UserID, Status: attempt.InProgress, StartedAt: now,
		ExpiresAt: now.Add(time.Duration(l.TimeLimitMinutes) * time.Minute), MaxPoints: l.MaxPoints()}, LabID: l.ID}
	if err := s.store.CreateAttempt(ctx, at, now.Add(-attemptWindow), s.allowStart(now)); errors.Is(err, attempt.ErrOpen) {
		if open, _ := s.store.FindOpenAttempt(ctx, l.ID, a.UserID); open != nil {
			return nil, attempt.OpenError(&open.Attempt)
		}
		return nil, err
	} else if err != nil {
		return nil, err
	}
	s.removeEndedSandboxes(ctx, a.UserID)
	machines, err := s.provision(ctx, a, l, at.ID)
	if err != nil {
		if derr := s.store.DeleteAttempt(context.WithoutCancel(ctx), at.ID); derr != nil {
			s.opt.Log.Warn("could not delete a failed lab attempt", "attempt_id", at.ID, "error", derr.Error())
		}
		return nil, err
	}
	return s.record(ctx, l, at.ID, activity.LabStarted, func(at *Attempt) {
		at.ContainerID = machines[0].ContainerID
		if len(l.Machines) > 0 {
			at.Machines = machines
		}
	})
}

// attemptWindow is the span AttemptsPerDay counts starts in.
const attemptWindow = 24 * time.Hour

// allowStart refuses a start past AttemptsPerDay starts of the lab in the
// last 24 hours (started, oldest first), saying when the next is allowed.
func (s *Service) allowStart(now time.Time) func(started []time.Time) error {
	return func(started []time.Time) error {
		if len(started) < s.opt.AttemptsPerDay {
			return nil
		}
		wait := started[len(started)-s.opt.AttemptsPerDay].Add(attemptWindow).Sub(now)
		wait = max(wait, time.Second)
		return &errs.Error{Kind: errs.TooManyRequests, RetryAfter: wait,
			Detail: fmt.Sprintf("You started this laboratory %d times in the last 24 hours, the most allowed: you can start it again in %s",
				len(started), roundUp(wait))}
	}
}

// roundUp writes d for a person: minutes (rounded up) below an hour, else
// hours and minutes.
func roundUp(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	if m < 60 {
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}

// removeEndedSandboxes removes the sandboxes of the user's lab attempts that
// have ended (submitted, expired, or past their deadline: ended as expired on
// the way), which Submit and the expiry paths normally remove already; this
// catches what they could not (an engine that was down, an attempt left to
// run out). A failure is logged, not returned: the quota, if still reached,
// refuses the new sandbox with its own message.
func (s *Service) removeEndedSandboxes(ctx context.Context, userID int64) {
	held, err := s.store.FindAttempts(ctx, AttemptFilter{UserID: userID, WithSandbox: true})
	if err != nil {
		s.opt.Log.Warn("could not list the sandboxes of ended lab attempts", "user_id", userID, "error", err.Error())
		return
	}
	now := s.now()
	for _, at := range held {
		if at.Status == attempt.InProgress && now.Before(at.ExpiresAt) || at.Status == attempt.Grading {
			continue
		}
		if at.Status == attempt.InProgress {
			ended, err := s.store.UpdateAttempt(ctx, at.ID, func(at *Attempt) error { at.ExpireIfDue(now); return nil })
			if err != nil {
				s.opt.Log.Warn("could not end an overdue lab attempt", "attempt_id", at.ID, "error", err.Error())
				continue
			}
			at = ended
		}
		s.removeSandbox(ctx, at)
	}
}

// removeSandbox removes the sandbox of an ended attempt, so that it stops
// counting against the learner's quotas, and records when on the attempt
// (deleting the sandbox's row already cleared its container_id). It returns
// the attempt as it is now; a failure is logged, and the next start tries
// again.
func (s *Service) removeSandbox(ctx context.Context, at *Attempt) *Attempt {
	ids := at.sandboxIDs()
	if len(ids) == 0 || at.Open() {
		return at
	}
	ctx = context.WithoutCancel(ctx)
	for _, id := range ids {
		err := s.sandboxes.Delete(ctx, actor.User(at.UserID), id)
		if err != nil && !errors.Is(err, sandbox.ErrContainerNotFound) {
			s.opt.Log.Warn("could not remove the sandbox of an ended lab attempt", "attempt_id", at.ID, "container_id", id, "error", err.Error())
			return at
		}
	}
	now := s.now()
	removed, err := s.store.UpdateAttempt(ctx, at.ID, func(at *Attempt) error {
		at.ContainerID, at.SandboxRemovedAt = nil, &now
		for i := range at.Machines {
			at.Machines[i].ContainerID = nil
		}
		return nil
	})
	if err != nil {
		s.opt.Log.Warn("could not record the removal of a lab attempt's sandbox", "attempt_id", at.ID, "error", err.Error())
		return at
	}
	return removed
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

// provision makes the attempt's sandbox, or a lab's machines on a private
// segment of the attempt's own, and runs the setups in them: the machines
// are returned in the lab's order (one unnamed for a lab of one sandbox).
// If any step fails, the sandboxes made are deleted.
func (s *Service) provision(ctx context.Context, a actor.Actor, l *Lab, attemptID int64) ([]AttemptMachine, error) {
	machines := l.Machines
	if len(machines) == 0 {
		machines = []Machine{{Setup: l.Setup}}
	}
	made := make([]*sandbox.Container, 0, len(machines))
	fail := func(err error) ([]AttemptMachine, error) {
		for _, c := range made {
			if derr := s.sandboxes.Delete(context.WithoutCancel(ctx), a, c.ID); derr != nil {
				s.opt.Log.Warn("could not delete the sandbox of a failed lab start", "container_id", c.ID, "error", derr.Error())
			}
		}
		return nil, err
	}
	for _, m := range machines {
		n := sandbox.NewContainer{TemplateID: l.TemplateID, Name: sandbox.FitName("Lab: " + l.Title)}
		if m.Name != "" {
			n.Name = sandbox.FitName("Lab: " + m.Name + " · " + l.Title)
			n.Hostname, n.Segment = m.Name, fmt.Sprintf("lab%d", attemptID)
		}
		c, err := s.sandboxes.Create(ctx, a, n)
		if errs.Is(err, errs.Invalid) {
			// The lab names a template that is gone: the lab's fault, not the learner's.
			return fail(errs.E(errs.Conflict, "This laboratory's sandbox template is missing: an admin must fix the laboratory"))
		}
		if err != nil {
			return fail(err)
		}
		made = append(made, c)
	}
	// Machines boot side by side; each setup waits for its own.
	for i, m := range machines {
		if err := s.setUp(ctx, l, made[i], m.Setup); err != nil {
			return fail(err)
		}
	}
	out := make([]AttemptMachine, len(made))
	for i, c := range made {
		out[i] = AttemptMachine{Name: machines[i].Name, ContainerID: &c.ID}
	}
	return out, nil
}

// setUp runs a setup script as root in c; a script that fails is the lab's
// fault, said without its output.
func (s *Service) setUp(ctx context.Context, l *Lab, c *sandbox.Container, script string) error {
	if script == "" {
		return nil
	}
	ran, err := s.sandboxes.ExecIn(ctx, c, sandbox.Script{Text: script, AsRoot: true, Timeout: s.opt.SetupTimeout})
	if err == nil && !ran[0].OK() {
		s.opt.Log.Error("laboratory setup failed", "lab_id", l.ID, "result", ran[0].String(), "stderr", ran[0].Stderr)
		err = &errs.Error{Kind: errs.Unavailable, RetryAfter: time.Minute,
			Detail: "This laboratory could not be prepared (its setup failed): try again later, and tell an admin if it persists"}
	}
	return err
}

// Check runs every task's check in the actor's open attempt now, without
// ending it, so the learner sees which tasks already pass. Checks of one
// attempt never overlap: one that runs is row state, and a check asked for
// while it runs, or sooner than CheckInterval after the last one ended, is
// refused with 429 and Retry-After, on every replica alike.
func (s *Service) Check(ctx context.Context, a actor.Actor, labID int64) (*Attempt, error) {
	l, err := s.store.FindLabByID(ctx, labID)
	if err != nil {
		return nil, err
	}
	open, err := s.attempts.Claim(ctx, l.ID, a.UserID, ErrNoOpenAttempt, s.claimCheck)
	if err != nil {
		return nil, err
	}
	// The check's end is recorded whatever happens to the request, or the
	// attempt would refuse checks until the claim went stale.
	results, err := s.checkAttempt(ctx, a, l, open)
	ctx = context.WithoutCancel(ctx)
	end := s.now()
	finish := func(at *Attempt) { at.CheckingSince, at.LastCheckAt = nil, &end }
	if err != nil {
		if _, rerr := s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error { finish(at); return nil }); rerr != nil {
			s.opt.Log.Warn("could not end a failed lab check", "attempt_id", open.ID, "error", rerr.Error())
		}
		return nil, err
	}
	return s.record(ctx, l, open.ID, activity.LabChecked, func(at *Attempt) { at.Results = results; finish(at) })
}

// claimCheck marks attempt at as being checked from now on, or says why it
// may not be: it ended (ErrExpired, a change to keep), is being graded, a
// check of it is running, or the last one ended less than CheckInterval ago.
func (s *Service) claimCheck(at *Attempt, now time.Time) error {
	switch {
	case at.ExpireIfDue(now):
		return attempt.ErrExpired
	case at.Status == attempt.Grading:
		return attempt.ErrGrading
	case at.Status != attempt.InProgress:
		return attempt.ErrFinished
	case s.checking(at, now):
		return s.checkRunning(at, now)
	case at.LastCheckAt != nil && now.Sub(*at.LastCheckAt) < s.opt.CheckInterval:
		wait := s.opt.CheckInterval - now.Sub(*at.LastCheckAt)
		return &errs.Error{Kind: errs.TooManyRequests, RetryAfter: wait,
			Detail: fmt.Sprintf("Checked a moment ago: check again in %d s", int(wait.Seconds()+0.999))}
	}
	at.CheckingSince = &now
	at.Checks++
	return nil
}

// checking reports whether a check of attempt at is running. A claim older
// than the longest a check can take (its budget, a sandbox start and the
// clean-up of timed-out scripts) was left by a server that stopped.
func (s *Service) checking(at *Attempt, now time.Time) bool {
	return at.CheckingSince != nil && now.Sub(*at.CheckingSince) < s.opt.CheckBudget+checkSlack
}

// checkSlack is what a check may take beyond its budget.
const checkSlack = time.Minute

// checkRunning refuses an action while a check of attempt at runs: 429,
// to be tried again about when the check will have ended.
func (s *Service) checkRunning(at *Attempt, now time.Time) error {
	wait := s.opt.CheckBudget - now.Sub(*at.CheckingSince)
	wait = min(max(wait, time.Second), s.opt.CheckBudget)
	return &errs.Error{Kind: errs.TooManyRequests, RetryAfter: wait,
		Detail: "A check of this attempt is running: wait for its results, then try again"}
}

// checkAttempt runs the checks of an open attempt in its sandbox.
func (s *Service) checkAttempt(ctx context.Context, a actor.Actor, l *Lab, at *Attempt) ([]TaskResult, error) {
	boxes, err := s.attemptSandboxes(ctx, at)
	if err != nil {
		return nil, err
	}
	for _, c := range boxes {
		if c == nil {
			return nil, errs.E(errs.Conflict, "This attempt's sandbox no longer exists: submit to end the attempt, then start the laboratory again")
		}
	}
	results, _, err := s.runChecks(ctx, l, boxes)
	return results, err
}

// Submit runs every task's check, ends the attempt and grades it, once: of
// concurrent submits one grades and the others get 409. A submit after the
// deadline is 409 and ends the attempt as expired; one while a check runs is
// 429. Once graded, the attempt's sandbox is removed (the answer says so in
// sandbox_removed_at), so that it no longer counts against the quotas.
func (s *Service) Submit(ctx context.Context, a actor.Actor, labID int64) (*Attempt, error) {
	l, err := s.store.FindLabByID(ctx, labID)
	if err != nil {
		return nil, err
	}
	open, err := s.attempts.Claim(ctx, l.ID, a.UserID, ErrNoOpenAttempt, s.claimGrading)
	if err != nil {
		return nil, err
	}
	results, points, err := s.grade(ctx, a, l, open)
	if err != nil {
		s.attempts.Release(ctx, open.ID)
		return nil, err
	}
	done, err := s.record(ctx, l, open.ID, activity.LabSubmitted, func(at *Attempt) {
		at.Results = results
		at.Finish(s.now(), points, l.MaxPoints(), l.PassingScore)
	})
	if err != nil {
		return nil, err
	}
	return s.removeSandbox(ctx, done), nil
}

// claimGrading takes attempt at for grading as Attempt.Claim does, but not
// while a check of it runs (429): the deadline still ends it first.
func (s *Service) claimGrading(at *Attempt, now time.Time) error {
	if at.Status == attempt.InProgress && now.Before(at.ExpiresAt) && s.checking(at, now) {
		return s.checkRunning(at, now)
	}
	return at.Claim(now)
}

// grade runs the checks of a claimed attempt. A sandbox that no longer
// exists fails every task rather than keeping the attempt open for good.
func (s *Service) grade(ctx context.Context, a actor.Actor, l *Lab, at *Attempt) ([]TaskResult, int, error) {
	boxes, err := s.attemptSandboxes(ctx, at)
	if err != nil {
		return nil, 0, err
	}
	return s.runChecks(ctx, l, boxes)
}

// attemptSandboxes returns the attempt's sandboxes by machine name ("" for a
// lab of one sandbox), each started if it was stopped (the idle stop may
// have stopped it), or nil for one that no longer exists.
func (s *Service) attemptSandboxes(ctx context.Context, at *Attempt) (map[string]*sandbox.Container, error) {
	machines := at.Machines
	if len(machines) == 0 {
		machines = []AttemptMachine{{ContainerID: at.ContainerID}}
	}
	out := make(map[string]*sandbox.Container, len(machines))
	for _, m := range machines {
		out[m.Name] = nil
		if m.ContainerID == nil {
			continue
		}
		c, err := s.sandboxes.Resume(ctx, actor.User(at.UserID), *m.ContainerID)
		if err != nil {
			return nil, err
		}
		out[m.Name] = c
	}
	return out, nil
}

// runChecks runs each task's check in c, in turn, and returns the results
// and points. The whole check is bounded: in wall time by CheckBudget (each
// script gets what is left of it, at most CheckTimeout, and tasks left when
// it is spent fail as not checked) and in kept output by checkOutputBudget
// (each script's cap is its share of what is left), and its scripts run at a
// lower CPU priority than the learner's own work.
func (s *Service) runChecks(ctx context.Context, l *Lab, boxes map[string]*sandbox.Container) ([]TaskResult, int, error) {
	ran := make([]*sandbox.Result, len(l.Tasks))
	for _, name := range machineNames(l) {
		var idx []int
		var checks []sandbox.Script
		for i, t := range l.Tasks {
			if t.Machine == name {
				idx = append(idx, i)
				checks = append(checks, sandbox.Script{Text: t.Check, AsRoot: true, Timeout: s.opt.CheckTimeout, OutputCap: checkOutputCap, Nice: checkNice})
			}
		}
		c := boxes[name]
		if len(checks) == 0 || c == nil {
			continue // a sandbox that no longer exists fails its tasks below
		}
		res, err := s.sandboxes.CheckInBudget(ctx, c, sandbox.Budget{Time: s.opt.CheckBudget, Output: checkOutputBudget, MinOutput: minOutputCap}, checks...)
		if err != nil {
			return nil, 0, err
		}
		for j, i := range idx {
			ran[i] = res[j]
		}
	}
	results, points := attempt.Tally(len(l.Tasks), func(i int) (TaskResult, int) {
		t, res := l.Tasks[i], ran[i]
		r := TaskResult{TaskID: t.ID, Position: t.Position, Title: t.Title}
		switch {
		case res == nil:
			r.ExitCode, r.Feedback = -1, []string{"The sandbox of this attempt no longer exists"}
			return r, 0
		case res.Skipped:
			r.ExitCode, r.TimedOut, r.Feedback = -1, true, []string{notChecked}
			return r, 0
		}
		r.Passed, r.Feedback = res.Verdict()
		r.ExitCode, r.TimedOut, r.Output = res.ExitCode, res.TimedOut, res.Transcript()
		if r.Passed {
			r.Points = t.Points
		}
		return r, r.Points
	})
	return results, points, nil
}

// machineNames are the names of l's machines in order, or the one unnamed
// sandbox of a lab without machines.
func machineNames(l *Lab) []string {
	if len(l.Machines) == 0 {
		return []string{""}
	}
	names := make([]string, len(l.Machines))
	for i, m := range l.Machines {
		names[i] = m.Name
	}
	return names
}

// notChecked is the feedback of a task whose check the budget left no time for.
const notChecked = "Not checked: the checks before it used up the time a check may take"

// Results returns an attempt for its owner (or an admin); another user's is
// ErrAttemptNotFound. An in-progress attempt past its deadline is ended as
// expired on the way.
func (s *Service) Results(ctx context.Context, a actor.Actor, id int64) (*Attempt, *Lab, error) {
	return attempt.OwnedOf(ctx, s.attempts, a, id, func(ctx context.Context, at *Attempt) (*Lab, error) {
		return s.store.FindLabByID(ctx, at.LabID)
	})
}

// What is kept of checks' output, for admins: at most checkOutputCap of each
// stream of one script, and about checkOutputBudget for a whole check (every
// task, both streams), with at least minOutputCap per stream; so a check's
// stored results stay small whatever its scripts print.
const (
	checkOutputCap    = 16 << 10
	checkOutputBudget = 64 << 10
	minOutputCap      = 512
)

// checkNice is the nice value checks run at: a check gives way to the
// learner's own work in the sandbox.
const checkNice = 10
