package lab

import (
	"context"

	"tuxlab/internal/actor"
)

// Progress is how a learner stands in one laboratory.
type Progress struct {
	Lab      *Lab
	Attempts int // started
	// Latest is the attempt started last, in any state; nil before the first.
	Latest *Attempt
	// Best is the ended attempt with the highest score (the earliest of
	// equals); nil before any ended.
	Best *Attempt
	// Passed: some attempt passed.
	Passed bool
}

// Progress returns the actor's standing in every laboratory, by lab id. It
// first ends the actor's attempts past their deadline as expired and removes
// the sandboxes of ended attempts (see removeEndedSandboxes), so what it
// reports is current and no ended attempt's sandbox holds a place in the
// learner's quota.
func (s *Service) Progress(ctx context.Context, a actor.Actor) ([]Progress, error) {
	s.removeEndedSandboxes(ctx, a.UserID)
	labs, err := s.store.FindLabs(ctx, Filter{})
	if err != nil {
		return nil, err
	}
	labs = s.kind().VisibleTo(a, labs)
	ats, err := s.store.FindAttempts(ctx, AttemptFilter{UserID: a.UserID})
	if err != nil {
		return nil, err
	}
	byLab := map[int64][]*Attempt{}
	for _, at := range ats {
		if at.Due(s.now()) { // one without a sandbox left to remove
			if at, err = s.attempts.Owned(ctx, at.ID, a.UserID, false); err != nil {
				return nil, err
			}
		}
		byLab[at.LabID] = append(byLab[at.LabID], at)
	}
	out := make([]Progress, len(labs))
	for i, l := range labs {
		out[i] = standing(l, byLab[l.ID])
	}
	return out, nil
}

// standing sums up a learner's attempts (oldest first) of lab l.
func standing(l *Lab, ats []*Attempt) Progress {
	p := Progress{Lab: l, Attempts: len(ats)}
	for _, at := range ats {
		p.Latest = at
		if at.Open() {
			continue
		}
		if p.Best == nil || at.Score > p.Best.Score {
			p.Best = at
		}
		p.Passed = p.Passed || at.Passed
	}
	return p
}

// ReleaseEndedSandboxes ends the actor's lab attempts past their deadline as
// expired and removes the sandboxes of their ended attempts, so that these
// no longer count against the learner's sandbox quotas: a lesson's practice
// sandbox made after a lab ran out finds room. Failures are logged; the
// quota, if still reached, says so itself.
func (s *Service) ReleaseEndedSandboxes(ctx context.Context, a actor.Actor) {
	s.removeEndedSandboxes(ctx, a.UserID)
}
