package class

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"tuxlab/internal/actor"
)

// Sort orders the learners view.
type Sort string

// The orders of the learners view.
const (
	ByName       Sort = "name"        // username, A to Z
	ByProgress   Sort = "progress"    // themes completed, fewest first
	ByLastActive Sort = "last_active" // longest idle first; never active before all
)

// ParseSort returns the Sort named s, or false.
func ParseSort(s string) (Sort, bool) {
	switch Sort(s) {
	case ByName, ByProgress, ByLastActive:
		return Sort(s), true
	}
	return "", false
}

// LearnersQuery selects a page of a class's learners.
type LearnersQuery struct {
	Sort   Sort
	Desc   bool
	Days   int // the activity window, in days up to now
	Offset int
	Limit  int // 0: every learner
}

// ModuleProgress is a learner's progress in one module.
type ModuleProgress struct {
	ModuleID  int64
	Title     string
	Completed int
	Total     int
	Percent   int
}

// Learner is one learner of a class with their records.
type Learner struct {
	Member
	Completed, Total, Percent int // themes, over the whole curriculum
	Modules                   []ModuleProgress
	Labs                      []AttemptRecord // oldest first
	Exams                     []AttemptRecord // oldest first
	// EventsInWindow counts the learner's activity since WindowStart.
	EventsInWindow int
	LastActiveAt   *time.Time
}

// LearnersPage is a page of a class's learners.
type LearnersPage struct {
	Class       *Class
	Learners    []*Learner
	Total       int
	WindowStart time.Time
}

func percent(part, whole int) int {
	if whole == 0 {
		return 0
	}
	return part * 100 / whole
}

// Learners returns a page of class id's learners with their progress per
// module, lab attempts and per-task results, exam results and activity,
// for its teacher (owner or admin) only: ErrClassNotFound for anyone else.
func (s *Service) Learners(ctx context.Context, a actor.Actor, id int64, q LearnersQuery) (*LearnersPage, error) {
	c, err := s.taught(ctx, a, id)
	if err != nil {
		return nil, err
	}
	members, err := s.store.FindMembers(ctx, id)
	if err != nil {
		return nil, err
	}
	since := s.stamp().AddDate(0, 0, -max(q.Days, 1))
	rec, err := s.store.FindRecords(ctx, id, since)
	if err != nil {
		return nil, err
	}
	modules, _, err := s.lessons.Modules(ctx, 0)
	if err != nil {
		return nil, err
	}
	learners := make([]*Learner, len(members))
	byID := make(map[int64]*Learner, len(members))
	for i, m := range members {
		learners[i] = &Learner{Member: m, Labs: []AttemptRecord{}, Exams: []AttemptRecord{}}
		byID[m.UserID] = learners[i]
	}
	done := map[int64]map[int64]bool{}
	for _, cp := range rec.Completions {
		if done[cp.UserID] == nil {
			done[cp.UserID] = map[int64]bool{}
		}
		done[cp.UserID][cp.ThemeID] = true
	}
	for _, l := range learners {
		l.Modules = make([]ModuleProgress, len(modules))
		for i, m := range modules {
			p := ModuleProgress{ModuleID: m.ID, Title: m.Title, Total: len(m.Themes)}
			for _, t := range m.Themes {
				if done[l.UserID][t.ID] {
					p.Completed++
				}
			}
			p.Percent = percent(p.Completed, p.Total)
			l.Completed += p.Completed
			l.Total += p.Total
			l.Modules[i] = p
		}
		l.Percent = percent(l.Completed, l.Total)
	}
	for _, r := range rec.Labs {
		if l := byID[r.UserID]; l != nil {
			l.Labs = append(l.Labs, r)
		}
	}
	for _, r := range rec.Exams {
		if l := byID[r.UserID]; l != nil {
			l.Exams = append(l.Exams, r)
		}
	}
	for _, e := range rec.Events {
		if l := byID[e.UserID]; l != nil {
			l.EventsInWindow = e.N
		}
	}
	for _, t := range rec.LastActive {
		if l := byID[t.UserID]; l != nil {
			at := t.At
			l.LastActiveAt = &at
		}
	}
	sortLearners(learners, q.Sort, q.Desc)
	page := &LearnersPage{Class: c, Total: len(learners), WindowStart: since}
	lo := min(q.Offset, len(learners))
	hi := len(learners)
	if q.Limit > 0 {
		hi = min(lo+q.Limit, len(learners))
	}
	page.Learners = learners[lo:hi]
	return page, nil
}

// sortLearners orders learners by key, ties by username then id, so pages
// never overlap.
func sortLearners(learners []*Learner, key Sort, desc bool) {
	slices.SortStableFunc(learners, func(x, y *Learner) int {
		c := cmp.Compare(strings.ToLower(x.Username), strings.ToLower(y.Username))
		switch key {
		case ByProgress:
			c = cmp.Or(cmp.Compare(x.Percent, y.Percent), cmp.Compare(x.Completed, y.Completed))
		case ByLastActive:
			c = compareTimes(x.LastActiveAt, y.LastActiveAt)
		}
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(strings.ToLower(x.Username), strings.ToLower(y.Username)), cmp.Compare(x.UserID, y.UserID))
	})
}

// compareTimes orders times with nil (never) first.
func compareTimes(x, y *time.Time) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		return -1
	case y == nil:
		return 1
	}
	return x.Compare(*y)
}
