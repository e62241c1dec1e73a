package exam

import (
	"context"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
)

// ErrDraftClosed refuses a draft for an attempt that can no longer change.
var ErrDraftClosed = errs.E(errs.Conflict, "This attempt is no longer in progress: its answers can no longer be saved")

// SaveDraft stores answers as the draft of the actor's attempt id, so that a
// reload, another tab or another device resumes with them in place. The
// answers are validated as a submission's are (422 naming the field); only
// the attempt's owner may save (another user's attempt is 404, an admin's
// included), and only while it is in progress before its deadline (else 409;
// an attempt past its deadline ends as expired on the way). A draft is not a
// submission: the submit sends the answers it grades.
func (s *Service) SaveDraft(ctx context.Context, a actor.Actor, id int64, answers []Answer) (*Attempt, *Exam, error) {
	at, err := s.attempts.Owned(ctx, id, a.UserID, false)
	if err != nil {
		return nil, nil, err
	}
	e, err := s.store.FindExamByID(ctx, at.ExamID)
	if err != nil {
		return nil, nil, err
	}
	if answers == nil {
		answers = []Answer{}
	}
	if err := (&Submission{Answers: answers}).validate(e); err != nil {
		return nil, nil, err
	}
	now := s.now()
	saved, err := s.store.SaveDraft(ctx, id, answers, now, func(at *Attempt) error {
		switch {
		case at.Status == attempt.Grading:
			return attempt.ErrGrading
		case at.Status != attempt.InProgress:
			return ErrDraftClosed
		case !now.Before(at.ExpiresAt):
			return attempt.ErrExpired
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return saved, e, nil
}

// gradeDraft grades an attempt that ran out of time from its saved draft,
// as a submit of those answers at the deadline would have (practical
// questions checked in the attempt's sandbox): what the learner saved
// counts. It keeps the attempt expired and records its score; an attempt
// never drafted, already graded, or that cannot be graded now (the engine
// is down: the next read tries again) is returned as it is.
func (s *Service) gradeDraft(ctx context.Context, at *Attempt) *Attempt {
	if at.Status != attempt.Expired || at.DraftSavedAt == nil || len(at.Results) > 0 {
		return at
	}
	ctx = context.WithoutCancel(ctx)
	e, err := s.store.FindExamByID(ctx, at.ExamID)
	if err != nil {
		s.opt.Log.Warn("could not grade the draft of an expired exam attempt", "attempt_id", at.ID, "error", err.Error())
		return at
	}
	draft := Submission{Answers: at.Draft}
	if err := draft.validate(e); err != nil { // the exam changed since: grade nothing rather than the wrong questions
		draft.Answers = nil
	}
	results, points, err := s.grade(ctx, actor.User(at.UserID), e, at, draft)
	if err != nil {
		s.opt.Log.Warn("could not grade the draft of an expired exam attempt", "attempt_id", at.ID, "error", err.Error())
		return at
	}
	graded, err := s.store.UpdateAttempt(ctx, at.ID, func(cur *Attempt) error {
		if cur.Status != attempt.Expired || len(cur.Results) > 0 {
			return nil // graded meanwhile
		}
		cur.Answers, cur.Results, cur.Points, cur.MaxPoints = draft.Answers, results, points, e.MaxPoints()
		cur.Score = attempt.Score(points, cur.MaxPoints)
		cur.Passed = cur.Score >= e.PassingScore
		return nil
	})
	if err != nil {
		s.opt.Log.Warn("could not record the grade of an expired exam attempt", "attempt_id", at.ID, "error", err.Error())
		return at
	}
	return graded
}

// endOverdue ends the user's attempts past their deadline as expired, each
// graded from its draft on the way (see gradeDraft), and returns every
// attempt of the user, oldest first, as they are then. A start calls it
// before it removes the sandboxes of ended attempts, so an overdue attempt's
// practical questions are checked while its sandbox is still there.
func (s *Service) endOverdue(ctx context.Context, userID int64) ([]*Attempt, error) {
	ats, err := s.store.FindUserAttempts(ctx, userID)
	if err != nil {
		return nil, err
	}
	for i, at := range ats {
		if at.Due(s.now()) {
			if ats[i], err = s.attempts.Owned(ctx, at.ID, userID, false); err != nil {
				return nil, err
			}
		}
	}
	return ats, nil
}
