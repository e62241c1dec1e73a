package exam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/sandbox"
)

// Sandboxes is what exams need of the sandbox service.
type Sandboxes interface {
	attempt.Sandboxes
	List(ctx context.Context, a actor.Actor) ([]*sandbox.Container, error)
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
	// Perm returns a random permutation of [0, n): the order an attempt
	// shows a choice question's options in (default math/rand/v2's Perm).
	Perm func(n int) []int
}

// Service is the exam domain.
type Service struct {
	store     Store
	sandboxes Sandboxes
	opt       Options
	attempts  attempt.Rows[Attempt, *Attempt]
}

// NewService returns a Service.
func NewService(store Store, sandboxes Sandboxes, o Options) *Service {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 10 * time.Second
	}
	activity.Defaults(&o.Now, &o.Log, &o.Activity)
	if o.Perm == nil {
		o.Perm = rand.Perm
	}
	s := &Service{store: store, sandboxes: sandboxes, opt: o}
	// An attempt that runs out of time is graded from its saved draft.
	s.attempts = attempt.Rows[Attempt, *Attempt]{Store: store, NotFound: ErrAttemptNotFound, Now: s.now, Ended: s.gradeDraft}
	return s
}

func (s *Service) now() time.Time { return s.opt.Now().UTC().Truncate(time.Microsecond) }

// Exams lists every published exam with its questions, by id: what
// learners see.
func (s *Service) Exams(ctx context.Context) ([]*Exam, error) {
	all, err := s.store.FindExams(ctx)
	if err != nil {
		return nil, err
	}
	return s.kind().Published(all), nil
}

// Exam returns one published exam; a draft is ErrExamNotFound. The caller
// decides what of it to show.
func (s *Service) Exam(ctx context.Context, id int64) (*Exam, error) {
	return s.examFor(ctx, actor.Actor{}, id)
}

// examFor returns exam id when a sees it: published, or a may change it.
func (s *Service) examFor(ctx context.Context, a actor.Actor, id int64) (*Exam, error) {
	e, err := s.store.FindExamByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !e.VisibleTo(a) {
		return nil, ErrExamNotFound
	}
	return e, nil
}

// Start begins an attempt of exam examID and returns it with the exam: 409
// naming the open attempt when one is in progress, 409 when every allowed
// attempt is used. The attempt shows each choice question's options in an
// order drawn now. An exam with practical questions gets a sandbox made for
// the attempt from its template, where they are graded (see freshSandbox).
func (s *Service) Start(ctx context.Context, a actor.Actor, examID int64) (*Attempt, *Exam, error) {
	e, err := s.examFor(ctx, a, examID)
	if err != nil {
		return nil, nil, err
	}
	if open, err := s.attempts.FindOpen(ctx, e.ID, a.UserID); err != nil {
		return nil, nil, err
	} else if open != nil {
		return nil, nil, attempt.OpenError(&open.Attempt)
	}
	// Counted again when the attempt is stored; asked first so that no
	// sandbox is made for a start that would be refused.
	if left, err := s.AttemptsLeft(ctx, e, a.UserID); err != nil {
		return nil, nil, err
	} else if left == 0 {
		return nil, nil, ErrNoAttemptsLeft
	}
	now := s.now()
	at := &Attempt{Attempt: attempt.Attempt{UserID: a.UserID, Status: attempt.InProgress, StartedAt: now,
		ExpiresAt: now.Add(time.Duration(e.TimeLimitMinutes) * time.Minute), MaxPoints: e.MaxPoints()}, ExamID: e.ID,
		Order: drawOrder(e, s.opt.Perm)}
	if e.HasPractical() {
		// Overdue attempts of other exams are graded from their drafts
		// before their sandboxes make room for this one.
		if _, err := s.endOverdue(ctx, a.UserID); err != nil {
			return nil, nil, err
		}
		box, err := s.freshSandbox(ctx, a, e)
		if err != nil {
			return nil, nil, err
		}
		at.ContainerID = &box.ID
	}
	if err := s.insert(ctx, e, at); err != nil {
		return nil, nil, err
	}
	return at, e, nil
}

// insert stores a new attempt with the activity record of its start, in one
// transaction. If the store refuses it (a concurrent start won, or the last
// attempt was taken meanwhile), the sandbox made for it goes again.
func (s *Service) insert(ctx context.Context, e *Exam, at *Attempt) error {
	err := s.opt.Activity.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateAttempt(ctx, at, e.MaxAttempts); err != nil {
			return err
		}
		return s.opt.Activity.Record(ctx, &activity.Event{UserID: at.UserID, Kind: activity.ExamStarted, At: at.StartedAt, SubjectID: e.ID,
			Title: e.Title, ModuleID: e.ModuleID})
	})
	if err == nil {
		return nil
	}
	if at.ContainerID != nil {
		if derr := s.sandboxes.Delete(context.WithoutCancel(ctx), actor.User(at.UserID), *at.ContainerID); derr != nil {
			s.opt.Log.Warn("could not delete the sandbox of a refused exam start", "container_id", *at.ContainerID, "error", derr.Error())
		}
	}
	if errors.Is(err, attempt.ErrOpen) {
		if open, _ := s.store.FindOpenAttempt(ctx, e.ID, at.UserID); open != nil {
			return attempt.OpenError(&open.Attempt)
		}
	}
	return err
}

// freshSandbox makes the sandbox a new attempt's practical questions are
// graded in, from the exam's template, so that nothing an earlier attempt
// (or anything else) left behind can pass them. It first removes the
// sandboxes of the learner's exam attempts that are over, so the new one
// takes the place of the last attempt's instead of counting beside it
// against the learner's sandbox quota. A quota still full is 409 saying
// what to stop or delete.
func (s *Service) freshSandbox(ctx context.Context, a actor.Actor, e *Exam) (*sandbox.Container, error) {
	owner := actor.User(a.UserID)
	ended, err := s.store.FindEndedAttemptSandboxes(ctx, a.UserID, s.now())
	if err != nil {
		return nil, err
	}
	for _, id := range ended {
		if err := s.sandboxes.Delete(ctx, owner, id); err != nil && !errors.Is(err, sandbox.ErrContainerNotFound) {
			return nil, err
		}
	}
	c, err := s.sandboxes.Create(ctx, owner, sandbox.NewContainer{TemplateID: *e.TemplateID, Name: sandbox.FitName("Exam: " + e.Title)})
	var quota *errs.Error
	switch {
	case errs.Is(err, errs.Invalid):
		// The exam names a template that is gone: the exam's fault, not the learner's.
		return nil, errs.E(errs.Conflict, "This exam's sandbox template is missing: an admin must fix the exam")
	case errs.Is(err, errs.Conflict) && errors.As(err, &quota):
		return nil, &errs.Error{Kind: errs.Conflict, Err: err,
			Detail: "Each exam attempt grades its practical questions in a fresh sandbox of its own, and there is no room for it. " + quota.Detail}
	}
	return c, err
}

// AttemptsLeft says how many attempts the user may still start (-1: no limit).
func (s *Service) AttemptsLeft(ctx context.Context, e *Exam, userID int64) (int, error) {
	if e.MaxAttempts == 0 {
		return -1, nil
	}
	n, err := s.store.CountAttempts(ctx, e.ID, userID)
	return max(e.MaxAttempts-n, 0), err
}

// Submission is a learner's answers (choice indexes in the order the attempt
// shows), and optionally the sandbox practical questions are checked in: the
// attempt's own, or for an attempt without one, another of the learner's
// (default: their running sandbox of the exam's template active last).
type Submission struct {
	Answers     []Answer
	ContainerID *int64
}

// MaxTextAnswer bounds a short-text answer.
const MaxTextAnswer = 1000

// validate checks a submission against the exam: every answer names a
// question of the exam once, and has the shape of its question's kind (a
// choice for single choice, choices for multiple choice, a text for short
// text, nothing for practical), in range. Problems name their fields.
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
		checkShape(&f, []any{"answers", i}, q.Kind, a)
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

// checkShape refuses the fields of an answer that its question's kind does
// not take, so a client that sends `choices` to a single-choice question
// learns of it instead of scoring nothing.
func checkShape(f *errs.Fields, loc []any, k Kind, a Answer) {
	takes := map[Kind]string{SingleChoice: "choice", MultipleChoice: "choices", ShortText: "text"}
	hint := map[Kind]string{SingleChoice: "one option index in `choice`", MultipleChoice: "option indexes in `choices`",
		ShortText: "its answer in `text`", Practical: "no answer: its check runs in the sandbox"}
	for _, given := range []struct {
		field   string
		present bool
	}{{"choice", a.Choice != nil}, {"choices", a.Choices != nil}, {"text", a.Text != nil}} {
		if field := given.field; given.present && takes[k] != field {
			f.Add(append(slices.Clone(loc), field), fmt.Sprintf("A %s question takes %s, not `%s`", k, hint[k], field), "extra_forbidden")
		}
	}
}

// Submit grades the actor's open attempt once: of concurrent submits one
// grades and the others get 409; after the deadline it is 409 and the
// attempt ends as expired. Choice answers are option indexes in the order
// the attempt shows; practical questions are checked in the attempt's
// sandbox (see gradingSandbox).
func (s *Service) Submit(ctx context.Context, a actor.Actor, examID int64, sub Submission) (*Attempt, *Exam, error) {
	e, err := s.store.FindExamByID(ctx, examID)
	if err != nil {
		return nil, nil, err
	}
	if err := sub.validate(e); err != nil {
		return nil, nil, err
	}
	open, err := s.attempts.Claim(ctx, e.ID, a.UserID, ErrNoOpenAttempt, nil)
	if err != nil {
		return nil, nil, err
	}
	results, points, err := s.grade(ctx, a, e, open, sub)
	if err != nil {
		s.attempts.Release(ctx, open.ID)
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

// grade scores every question of attempt at; unanswered ones score nothing.
func (s *Service) grade(ctx context.Context, a actor.Actor, e *Exam, at *Attempt, sub Submission) ([]QuestionResult, int, error) {
	checked, err := s.runPractical(ctx, a, e, at, sub.ContainerID)
	if err != nil {
		return nil, 0, err
	}
	answers := map[int64]Answer{}
	for _, an := range sub.Answers {
		answers[an.QuestionID] = an
	}
	results, points := attempt.Tally(len(e.Questions), func(i int) (QuestionResult, int) {
		q := e.Questions[i]
		r := QuestionResult{QuestionID: q.ID, Position: q.Position, Kind: q.Kind, MaxPoints: q.Points, Feedback: []string{}}
		an, answered := answers[q.ID]
		switch res := checked[q.ID]; {
		case q.Kind != Practical:
			r.Correct = answered && q.correct(at.authored(q, an))
		case res == nil:
			r.Feedback = []string{sandboxGone}
		default:
			r.Correct, r.Feedback = res.Verdict()
			r.Output = res.Transcript()
		}
		if r.Correct {
			r.Points = q.Points
		}
		return r, r.Points
	})
	return results, points, nil
}

// sandboxGone is a practical question's feedback when the attempt's sandbox
// was deleted before the submission.
const sandboxGone = "The sandbox of this attempt no longer exists, so this task could not be checked"

// runPractical runs every practical check of e in one go in the sandbox of
// attempt at, and returns each question's result; none when the exam has no
// practical question or the attempt's sandbox is gone.
func (s *Service) runPractical(ctx context.Context, a actor.Actor, e *Exam, at *Attempt, named *int64) (map[int64]*sandbox.Result, error) {
	checked := map[int64]*sandbox.Result{}
	if !e.HasPractical() {
		return checked, nil
	}
	box, err := s.gradingSandbox(ctx, a, e, at, named)
	if err != nil || box == nil {
		return checked, err
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
		return nil, err
	}
	for i, q := range practical {
		checked[q.ID] = ran[i]
	}
	return checked, nil
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

// gradingSandbox returns the running sandbox the practical questions of
// attempt at are graded in. An attempt made with a sandbox of its own is
// graded there and nowhere else: naming another is 422, a sandbox the idle
// stop stopped is started again, and one that is gone (deleted, or broken)
// is nil, which fails those questions rather than keeping the attempt open
// for good. An attempt without one (started before attempts had their own)
// is graded in legacySandbox.
func (s *Service) gradingSandbox(ctx context.Context, a actor.Actor, e *Exam, at *Attempt, named *int64) (*sandbox.Container, error) {
	if at.ContainerID == nil {
		return s.legacySandbox(ctx, a, e, named)
	}
	if named != nil && *named != *at.ContainerID {
		return nil, errs.Field([]any{"container_id"},
			fmt.Sprintf("This attempt's practical questions are graded in its own sandbox, %d: name that one or none", *at.ContainerID), "value_error")
	}
	return s.sandboxes.Resume(ctx, actor.User(at.UserID), *at.ContainerID)
}

// legacySandbox finds the running sandbox the practical questions of an
// attempt without a sandbox of its own are checked in: the one the learner
// named, or their last active running sandbox of the exam's template.
// Without one the submit is refused (409) and the attempt stays open, so the
// learner can start a sandbox and submit again.
func (s *Service) legacySandbox(ctx context.Context, a actor.Actor, e *Exam, id *int64) (*sandbox.Container, error) {
	if id != nil {
		c, err := s.sandboxes.Get(ctx, actor.User(a.UserID), *id)
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
	cs, err := s.sandboxes.List(ctx, actor.User(a.UserID))
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

// Attempt returns one attempt, in any state, for its owner (or an admin)
// with its exam; another user's is ErrAttemptNotFound. An attempt past its
// deadline is ended as expired on the way.
func (s *Service) Attempt(ctx context.Context, a actor.Actor, id int64) (*Attempt, *Exam, error) {
	at, e, err := attempt.OwnedOf(ctx, s.attempts, a, id, func(ctx context.Context, at *Attempt) (*Exam, error) {
		return s.store.FindExamByID(ctx, at.ExamID)
	})
	if err != nil {
		return nil, nil, err
	}
	return s.gradeDraft(ctx, at), e, nil // one whose grading failed when it expired
}

// Results returns a finished attempt as Attempt does; one still in progress
// is ErrNotFinished.
func (s *Service) Results(ctx context.Context, a actor.Actor, id int64) (*Attempt, *Exam, error) {
	at, e, err := s.Attempt(ctx, a, id)
	if err != nil {
		return nil, nil, err
	}
	if at.Open() {
		return nil, nil, ErrNotFinished
	}
	return at, e, nil
}
