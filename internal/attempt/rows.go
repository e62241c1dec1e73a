package attempt

import (
	"context"
	"errors"
	"time"

	"tuxlab/internal/actor"
)

// Record is a domain's attempt type (an exam's or a lab's) through its
// pointer, which embeds Attempt.
type Record[T any] interface {
	*T
	Shared() *Attempt
}

// Shared returns the shared part of a domain's attempt.
func (a *Attempt) Shared() *Attempt { return a }

// Due reports whether an in-progress attempt's deadline has passed at now.
func (a *Attempt) Due(now time.Time) bool { return a.Status == InProgress && !now.Before(a.ExpiresAt) }

// Store is the part of a domain's store that Rows uses, on its attempt type P.
type Store[P any] interface {
	FindAttemptByID(ctx context.Context, id int64) (P, error)
	// FindOpenAttempt returns the user's open attempt of a subject (an
	// exam, a lab).
	FindOpenAttempt(ctx context.Context, subjectID, userID int64) (P, error)
	// UpdateAttempt applies change to attempt id in one transaction.
	UpdateAttempt(ctx context.Context, id int64, change func(P) error) (P, error)
}

// Rows is the lifecycle exam and lab attempts share over a domain's store:
// expiry on read, the open attempt of a subject (an exam, a lab), the
// owner's read and the grading claim. Each domain passes its store's calls
// and its own rules (what ends with an attempt, how a claim may be refused).
type Rows[T any, P Record[T]] struct {
	Store Store[P]
	// NotFound is what the store returns when there is no such attempt.
	NotFound error
	Now      func() time.Time
	// Ended, when set, tidies up after an attempt ended as expired on the
	// way or refused a claim, and returns the attempt as it is then.
	Ended func(context.Context, P) P
}

func (r Rows[T, P]) ended(ctx context.Context, at P) P {
	if r.Ended == nil {
		return at
	}
	return r.Ended(ctx, at)
}

// expire ends at as expired when its deadline has passed, returning the
// attempt as stored then and whether it ended it.
func (r Rows[T, P]) expire(ctx context.Context, at P) (P, bool, error) {
	if !at.Shared().Due(r.Now()) {
		return at, false, nil
	}
	ended, err := r.Store.UpdateAttempt(ctx, at.Shared().ID, func(at P) error { at.Shared().ExpireIfDue(r.Now()); return nil })
	return ended, err == nil, err
}

// FindOpen returns the user's open attempt of a subject, or nil. One whose
// deadline has passed is ended as expired on the way (and is not open).
func (r Rows[T, P]) FindOpen(ctx context.Context, subjectID, userID int64) (P, error) {
	open, err := r.Store.FindOpenAttempt(ctx, subjectID, userID)
	if errors.Is(err, r.NotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if ended, ok, err := r.expire(ctx, open); err != nil || ok {
		if ok {
			r.ended(ctx, ended)
		}
		return nil, err
	}
	return open, nil
}

// Owned returns attempt id for its owner, userID, or for an admin; another
// user's is NotFound. An in-progress attempt past its deadline is ended as
// expired on the way.
func (r Rows[T, P]) Owned(ctx context.Context, id, userID int64, admin bool) (P, error) {
	at, err := r.Store.FindAttemptByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if at.Shared().UserID != userID && !admin {
		return nil, r.NotFound
	}
	at, ok, err := r.expire(ctx, at)
	if err != nil {
		return nil, err
	}
	if ok {
		at = r.ended(ctx, at)
	}
	return at, nil
}

// OwnedOf returns attempt id as Rows.Owned does for actor a, with the
// subject it is an attempt of (an exam, a lab) that subject finds.
func OwnedOf[T any, P Record[T], S any](ctx context.Context, r Rows[T, P], a actor.Actor, id int64,
	subject func(context.Context, P) (S, error)) (P, S, error) {
	var none S
	at, err := r.Owned(ctx, id, a.UserID, a.IsAdmin())
	if err != nil {
		return nil, none, err
	}
	sub, err := subject(ctx, at)
	return at, sub, err
}

// Claim finds the user's open attempt of a subject (none is noOpen) and
// claims it with claim, in the store's transaction: by default
// Attempt.Claim, which takes it for grading so that of concurrent submits
// exactly one grades. A refusal is returned as the error, after Ended; else
// the attempt as the claim stored it.
func (r Rows[T, P]) Claim(ctx context.Context, subjectID, userID int64, noOpen error, claim func(P, time.Time) error) (P, error) {
	open, err := r.Store.FindOpenAttempt(ctx, subjectID, userID)
	if errors.Is(err, r.NotFound) {
		return nil, noOpen
	}
	if err != nil {
		return nil, err
	}
	if claim == nil {
		claim = func(at P, now time.Time) error { return at.Shared().Claim(now) }
	}
	var refusal error
	now := r.Now()
	claimed, err := r.Store.UpdateAttempt(ctx, open.Shared().ID, func(at P) error { refusal = claim(at, now); return nil })
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		r.ended(ctx, claimed)
		return nil, refusal
	}
	return claimed, nil
}

// Release gives the claim on attempt id back after grading failed for a
// reason not the learner's; it is in progress again. It runs even when ctx
// is cancelled, and a failure leaves the claim to go stale.
func (r Rows[T, P]) Release(ctx context.Context, id int64) {
	r.Store.UpdateAttempt(context.WithoutCancel(ctx), id, func(at P) error { at.Shared().Release(); return nil })
}
