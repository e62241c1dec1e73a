package exam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"tuxlab/internal/activity"

	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Sandboxes is what exams need of the sandbox service.
type Sandboxes interface {
	List(ctx context.Context, a sandbox.Actor) ([]*sandbox.Container, error)
	Get(ctx context.Context, a sandbox.Actor, id int64) (*sandbox.Container, error)
	// CheckIn runs checks only in a sandbox whose system files were not
	// tampered with; otherwise each result fails with the reason.
	CheckIn(ctx context.Context, c *sandbox.Container, checks ...sandbox.Script) ([]*sandbox.Result, error)
}

// Options tune a Service.
type Options struct {
	CheckTimeout time.Duration // one practical check (default 10s)
	Now          func() time.Time
	Log          *slog.Logger
	Activity     activity.Log // records starts and submissions with their rows (default: none)
}

// Service is the exam domain.
type Service struct {
	store     Store
	sandboxes Sandboxes
	opt       Options
}

// NewService returns a Service.
func NewService(store Store, sandboxes Sandboxes, o Options) *Service {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 10 * time.Second
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
	return &Service{store: store, sandboxes: sandboxes, opt: o}
}

func (s *Service) now() time.Time { return s.opt.Now().UTC().Truncate(time.Microsecond) }

// Exams lists every exam with its questions, by id.
func (s *Service) Exams(ctx context.Context) ([]*Exam, error) { return s.store.FindExams(ctx) }

// Exam returns one exam. The caller decides what of it to show.
func (s *Service) Exam(ctx context.Context, id int64) (*Exam, error) {
	return s.store.FindExamByID(ctx, id)
}

// Start begins an attempt: 409 naming the open attempt when one is in
// progress, 409 when every allowed attempt is used.
func (s *Service) Start(ctx context.Context, a sandbox.Actor, examID int64) (*Attempt, error) {
	e, err := s.store.FindExamByID(ctx, examID)
	if err != nil {
		return nil, err
	}
	if open, err := s.openAttempt(ctx, e.ID, a.UserID); err != nil {
		return nil, err
	} else if open != nil {
		return nil, attempt.OpenError(&open.Attempt)
	}
	now := s.now()
	at := &Attempt{Attempt: attempt.Attempt{UserID: a.UserID, Status: attempt.InProgress, StartedAt: now,
		ExpiresAt: now.Add(time.Duration(e.TimeLimitMinutes) * time.Minute), MaxPoints: e.MaxPoints()}, ExamID: e.ID}
	err = s.opt.Activity.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateAttempt(ctx, at, e.MaxAttempts); err != nil {
			return err
		}
		return s.opt.Activity.Record(ctx, &activity.Event{UserID: a.UserID, Kind: activity.ExamStarted, At: now, SubjectID: e.ID,
			Title: e.Title, ModuleID: e.ModuleID})
	})
	if errors.Is(err, attempt.ErrOpen) {
		if open, _ := s.store.FindOpenAttempt(ctx, e.ID, a.UserID); open != nil {
			return nil, attempt.OpenError(&open.Attempt)
		}
	}
	if err != nil {
		return nil, err
	}
	return at, nil
}

// AttemptsLeft says how many attempts the user may still start (-1: no limit).
func (s *Service) AttemptsLeft(ctx context.Context, e *Exam, userID int64) (int, error) {
	if e.MaxAttempts == 0 {
		return -1, nil
	}
	n, err := s.store.CountAttempts(ctx, e.ID, userID)
	return max(e.MaxAttempts-n, 0), err
}

func (s *Service) openAttempt(ctx context.Context, examID, userID int64) (*Attempt, error) {
	open, err := s.store.FindOpenAttempt(ctx, examID, userID)
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

// Submission is a learner's answers, and optionally the sandbox practical
// questions are checked in (default: the learner's running sandbox of the
// exam's template that was active last).
type Submission struct {
	Answers     []Answer
	ContainerID *int64
}

// MaxTextAnswer bounds a short-text answer.
const MaxTextAnswer = 1000

// validate checks a submission against the exam; problems name their fields.
func (sub *Submission) validate(e *Exam) error {
	var f errs.Fields
	byID := map[int64]*Question{}
	for _, q := range e.Questions {
		byID[q.ID] = q
	}
	if len(sub.Answers) > len(e.Questions) {
		f.Add([]any{"answers"}, fmt.Sprintf("At most %d answers: one per question", len(e.Questions)), "too_long")
		return f.Err()
	}
	seen := map[int64]bool{}
	for i, a := range sub.Answers {
		q := byID[a.QuestionID]
		switch {
		case q == nil:
			f.Add([]any{"answers", i, "question_id"}, "No question of this exam has this id", "value_error")
			continue
		case seen[a.QuestionID]:
			f.Add([]any{"answers", i, "question_id"}, "This question is answered twice", "value_error")
		}
		seen[a.QuestionID] = true
		inRange := func(c int) bool { return c >= 0 && c < len(q.Options) }
		switch q.Kind {
		case SingleChoice:
			if a.Choice != nil && !inRange(*a.Choice) {
				f.Add([]any{"answers", i, "choice"}, fmt.Sprintf("Input should be an option index from 0 to %d", len(q.Options)-1), "range")
			}
		case MultipleChoice:
			if len(a.Choices) > len(q.Options) {
				f.Add([]any{"answers", i, "choices"}, "More choices than options", "too_long")
			}
			for _, c := range a.Choices {
				if !inRange(c) {
					f.Add([]any{"answers", i, "choices"}, fmt.Sprintf("Input should be option indexes from 0 to %d", len(q.Options)-1), "range")
					break
				}
			}
		case ShortText:
			if a.Text != nil && len([]rune(*a.Text)) > MaxTextAnswer {
				f.Add([]any{"answers", i, "text"}, "An answer is at most 1000 characters", "string_too_long")
			}
		}
	}
	return f.Err()
}

// Submit grades the actor's open attempt once: of concurrent submits one
// grades and the others get 409; after the deadline it is 409 and the
// attempt ends as expired. Practical questions are checked in the learner's
// running sandbox.
func (s *Service) Submit(ctx context.Context, a sandbox.Actor, examID int64, sub Submission) (*Attempt, *Exam, error) {
	e, err := s.store.FindExamByID(ctx, examID)
	if err != nil {
		return nil, nil, err
	}
	if err := sub.validate(e); err != nil {
		return nil, nil, err
	}
	open, err := s.store.FindOpenAttempt(ctx, e.ID, a.UserID)
	if errors.Is(err, ErrAttemptNotFound) {
		return nil, nil, ErrNoOpenAttempt
	}
	if err != nil {
		return nil, nil, err
	}
	var refusal error
	if _, err := s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error { refusal = at.Claim(s.now()); return nil }); err != nil {
		return nil, nil, err
	}
	if refusal != nil {
		return nil, nil, refusal
	}
	results, points, err := s.grade(ctx, a, e, sub)
	if err != nil {
		s.store.UpdateAttempt(context.WithoutCancel(ctx), open.ID, func(at *Attempt) error { at.Release(); return nil })
		return nil, nil, err
	}
	var at *Attempt
	err = s.opt.Activity.InTx(ctx, func(ctx context.Context) error {
		var err error
		at, err = s.store.UpdateAttempt(ctx, open.ID, func(at *Attempt) error {
			at.Answers, at.Results = sub.Answers, results
			at.Finish(s.now(), points, e.MaxPoints(), e.PassingScore)
			return nil
		})
		if err != nil {
			return err
		}
		return s.opt.Activity.Record(ctx, &activity.Event{UserID: at.UserID, Kind: activity.ExamSubmitted, At: *at.FinishedAt,
			SubjectID: e.ID, Title: e.Title, ModuleID: e.ModuleID, Score: &at.Score, Passed: &at.Passed})
	})
	return at, e, err
}

// grade scores every question; unanswered ones score nothing.
func (s *Service) grade(ctx context.Context, a sandbox.Actor, e *Exam, sub Submission) ([]QuestionResult, int, error) {
	// Every practical check runs first, in one go in the learner's sandbox.
	checked := map[int64]*sandbox.Result{}
	if e.HasPractical() {
		box, err := s.practicalSandbox(ctx, a, e, sub.ContainerID)
		if err != nil {
			return nil, 0, err
		}
		var practical []*Question
		var checks []sandbox.Script
		for _, q := range e.Questions {
			if q.Kind == Practical {
				practical = append(practical, q)
				checks = append(checks, sandbox.Script{Text: q.Key.Check, AsRoot: true, Timeout: s.opt.CheckTimeout, OutputCap: 16 << 10})
			}
		}
		ran, err := s.sandboxes.CheckIn(ctx, box, checks...)
		if err != nil {
			return nil, 0, err
		}
		for i, q := range practical {
			checked[q.ID] = ran[i]
		}
	}
	answers := map[int64]Answer{}
	for _, an := range sub.Answers {
		answers[an.QuestionID] = an
	}
	results := make([]QuestionResult, len(e.Questions))
	points := 0
	for i, q := range e.Questions {
		r := QuestionResult{QuestionID: q.ID, Position: q.Position, Kind: q.Kind, MaxPoints: q.Points, Feedback: []string{}}
		an, answered := answers[q.ID]
		switch q.Kind {
		case Practical:
			res := checked[q.ID]
			r.Correct, r.Feedback = res.Verdict()
			r.Output = res.Transcript()
		default:
			r.Correct = answered && q.correct(an)
		}
		if r.Correct {
			r.Points = q.Points
			points += q.Points
		}
		results[i] = r
	}
	return results, points, nil
}

// correct grades a non-practical answer.
func (q *Question) correct(a Answer) bool {
	switch q.Kind {
	case SingleChoice:
		return a.Choice != nil && q.Key.Answer != nil && *a.Choice == *q.Key.Answer
	case MultipleChoice:
		got, want := slices.Clone(a.Choices), slices.Clone(q.Key.Answers)
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(slices.Compact(got), want)
	case ShortText:
		if a.Text == nil {
			return false
		}
		given := normalize(*a.Text, q.Key.CaseSensitive)
		for _, acc := range q.Key.Accept {
			if given == normalize(acc, q.Key.CaseSensitive) {
				return true
			}
		}
	}
	return false
}

// normalize trims and collapses whitespace, and folds case unless asked not to.
func normalize(s string, caseSensitive bool) string {
	s = strings.Join(strings.Fields(s), " ")
	if !caseSensitive {
		s = strings.ToLower(s)
	}
	return s
}

// practicalSandbox finds the running sandbox practical questions are checked
// in: the one the learner named, or their last active running sandbox of the
// exam's template. Without one the submit is refused (409) and the attempt
// stays open, so the learner can start a sandbox and submit again.
func (s *Service) practicalSandbox(ctx context.Context, a sandbox.Actor, e *Exam, id *int64) (*sandbox.Container, error) {
	if id != nil {
		c, err := s.sandboxes.Get(ctx, sandbox.Actor{UserID: a.UserID}, *id)
		if errors.Is(err, sandbox.ErrContainerNotFound) {
			return nil, errs.Field([]any{"container_id"}, "No sandbox of yours has this id", "value_error")
		}
		if err != nil {
			return nil, err
		}
		if c.Status != sandbox.StatusRunning {
			return nil, errs.E(errs.Conflict, "This exam checks practical questions in your sandbox: start it, then submit again")
		}
		return c, nil
	}
	cs, err := s.sandboxes.List(ctx, sandbox.Actor{UserID: a.UserID})
	if err != nil {
		return nil, err
	}
	var best *sandbox.Container
	for _, c := range cs {
		if c.Status != sandbox.StatusRunning || (e.TemplateID != nil && c.TemplateID != *e.TemplateID) {
			continue
		}
		if best == nil || c.LastActivityAt.After(best.LastActivityAt) {
			best = c
		}
	}
	if best == nil {
		return nil, errs.E(errs.Conflict, "This exam checks practical questions in your sandbox: create or start one from the exam's template, then submit again")
	}
	return best, nil
}

// Results returns a finished attempt for its owner (or an admin); another
// user's is ErrAttemptNotFound. An attempt past its deadline is ended as
// expired on the way; one still in progress is ErrNotFinished.
func (s *Service) Results(ctx context.Context, a sandbox.Actor, id int64) (*Attempt, *Exam, error) {
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
	if at.Open() {
		return nil, nil, ErrNotFinished
	}
	e, err := s.store.FindExamByID(ctx, at.ExamID)
	return at, e, err
}
