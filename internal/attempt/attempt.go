// Package attempt holds what exam and laboratory attempts share: their
// states, the deadline, the claim that makes grading happen once, and the
// score. A learner has at most one open attempt per exam or lab.
//
//	in_progress ──submit──▶ grading ──▶ submitted
//	     │                     │ (a failed grading returns to in_progress)
//	     └──deadline passes──▶ expired
package attempt

import (
	"time"

	"tuxlab/internal/errs"
)

// Status is the state of an attempt.
type Status string

// The states.
const (
	InProgress Status = "in_progress"
	Grading    Status = "grading" // claimed by one submit; others are refused
	Submitted  Status = "submitted"
	Expired    Status = "expired"
)

// GradingStale is how long a grading claim holds. A server that died while
// grading leaves the claim behind; after this long a submit may claim again.
const GradingStale = 5 * time.Minute

// Attempt is the shared part of an exam or lab attempt.
type Attempt struct {
	ID           int64
	UserID       int64
	Status       Status
	StartedAt    time.Time
	ExpiresAt    time.Time
	FinishedAt   *time.Time
	GradingSince *time.Time
	Points       int // earned
	MaxPoints    int
	Score        int // percent of MaxPoints, rounded down
	Passed       bool
}

// Errors of attempts.
var (
	ErrExpired  = errs.E(errs.Conflict, "The time limit has passed: the attempt ended as expired")
	ErrFinished = errs.E(errs.Conflict, "This attempt is already submitted")
	ErrGrading  = errs.E(errs.Conflict, "This attempt is being graded: wait for its results")
	// ErrOpen is what a store returns when a second open attempt would be inserted.
	ErrOpen = errs.E(errs.Conflict, "An attempt is already in progress")
)

// OpenError refuses a start while attempt a is in progress, naming it and its
// deadline, so a client that did not start it (another tab, a reload) can
// carry on with the right time left.
func OpenError(a *Attempt) error {
	return &errs.Error{Kind: errs.Conflict, Detail: "An attempt is already in progress: continue or submit it",
		Extra: map[string]any{"attempt_id": a.ID, "expires_at": a.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z")}}
}

// Open reports whether the attempt is still in progress (or being graded).
func (a *Attempt) Open() bool { return a.Status == InProgress || a.Status == Grading }

// ExpireIfDue ends an in-progress attempt whose deadline has passed, and
// reports whether it did.
func (a *Attempt) ExpireIfDue(now time.Time) bool {
	if a.Status != InProgress || now.Before(a.ExpiresAt) {
		return false
	}
	a.Status, a.FinishedAt = Expired, &now
	return true
}

// Claim takes an attempt for grading, so that of concurrent submits exactly
// one grades. It returns why it cannot: ErrExpired (the attempt has just been
// ended as expired, a change the caller must keep), ErrFinished or ErrGrading.
func (a *Attempt) Claim(now time.Time) error {
	if a.ExpireIfDue(now) {
		return ErrExpired
	}
	switch a.Status {
	case Submitted:
		return ErrFinished
	case Expired:
		return ErrExpired
	case Grading:
		if a.GradingSince != nil && now.Sub(*a.GradingSince) < GradingStale {
			return ErrGrading
		}
	}
	a.Status, a.GradingSince = Grading, &now
	return nil
}

// Release gives a claim back after grading failed for a reason not the
// learner's (the engine is down): the attempt is in progress again.
func (a *Attempt) Release() {
	if a.Status == Grading {
		a.Status, a.GradingSince = InProgress, nil
	}
}

// Finish records the grade of a claimed attempt.
func (a *Attempt) Finish(now time.Time, points, maxPoints, passingScore int) {
	a.Status, a.FinishedAt, a.GradingSince = Submitted, &now, nil
	a.Points, a.MaxPoints = points, maxPoints
	a.Score = Score(points, maxPoints)
	a.Passed = a.Score >= passingScore
}

// Score is points as a percentage of maxPoints, rounded down (0 when there
// are no points to earn).
func Score(points, maxPoints int) int {
	if maxPoints <= 0 {
		return 0
	}
	return points * 100 / maxPoints
}
