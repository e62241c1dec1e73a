package exam

import (
	"context"

	"tuxlab/internal/actor"
	"tuxlab/internal/attempt"
)

// Progress is how a learner stands in one exam.
type Progress struct {
	Exam *Exam
	// Used counts the attempts started; Left how many more may be started
	// (-1: no limit).
	Used, Left int
	// Best is the finished attempt with the highest score (the earliest of
	// equals), nil before any ended.
	Best *Attempt
	// Passed: some attempt passed.
	Passed bool
	// Open is the attempt in progress (or being graded), if any.
	Open *Attempt
}

// Progress returns the actor's standing in every exam, by exam id. An
// attempt in progress past its deadline is ended as expired on the way, so
// it is never reported open.
func (s *Service) Progress(ctx context.Context, a actor.Actor) ([]Progress, error) {
	exams, err := s.store.FindExams(ctx)
	if err != nil {
		return nil, err
	}
	exams = s.kind().VisibleTo(a, exams)
	ats, err := s.endOverdue(ctx, a.UserID)
	if err != nil {
		return nil, err
	}
	byExam := map[int64][]*Attempt{}
	for _, at := range ats {
		byExam[at.ExamID] = append(byExam[at.ExamID], at)
	}
	out := make([]Progress, len(exams))
	for i, e := range exams {
		out[i] = standing(e, byExam[e.ID])
	}
	return out, nil
}

// standing sums up a learner's attempts (oldest first) of exam e.
func standing(e *Exam, ats []*Attempt) Progress {
	p := Progress{Exam: e, Used: len(ats), Left: -1}
	if e.MaxAttempts > 0 {
		p.Left = max(e.MaxAttempts-len(ats), 0)
	}
	for _, at := range ats {
		switch {
		case at.Open():
			p.Open = at
		case at.Status == attempt.Submitted || at.Status == attempt.Expired:
			if p.Best == nil || at.Score > p.Best.Score {
				p.Best = at
			}
			p.Passed = p.Passed || at.Passed
		}
	}
	return p
}
