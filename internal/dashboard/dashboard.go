// Package dashboard computes a learner's numbers (progress, passes, best
// scores, streaks, activity per day, time spent) from the activity records
// and the domains' own rows. Numbers a route shows are computed here, not in
// HTTP handlers.
package dashboard

import (
	"context"
	"slices"
	"sort"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

// AttemptSummary is one finished exam or lab attempt, as the dashboard needs it.
type AttemptSummary struct {
	Kind             string // "exam" or "lab"
	SubjectID        int64  // the exam or lab
	Title            string
	StartedAt        time.Time
	FinishedAt       time.Time
	Status           string // submitted or expired
	Score            int
	Passed           bool
	TimeLimitMinutes int
}

// Store reads what the dashboard shows. Every method reads one user's rows.
type Store interface {
	// FindEvents returns a page of the user's events, newest first, and the total.
	FindEvents(ctx context.Context, userID int64, kind activity.Kind, offset, limit int) ([]*activity.Event, int, error)
	// EventBuckets counts the user's events per quarter of an hour since a
	// time, oldest first: every time zone's offset is a whole number of
	// quarters, so days counted from buckets are exact in any of them, and a
	// learner with thousands of events yields a few hundred rows.
	EventBuckets(ctx context.Context, userID int64, since time.Time) ([]Bucket, error)
	// LastActive returns when the user last did anything; nil if never.
	LastActive(ctx context.Context, userID int64) (*time.Time, error)
	// FinishedAttempts returns the user's submitted and expired attempts, oldest first.
	FinishedAttempts(ctx context.Context, userID int64) ([]AttemptSummary, error)
	CountRunningSandboxes(ctx context.Context, userID int64) (int, error)
	SystemStore
}

// Bucket counts the events of one quarter of an hour, starting at Start.
type Bucket struct {
	Start  time.Time
	Events int
}

// Curriculum is what the dashboard needs of the lessons.
type Curriculum interface {
	Modules(ctx context.Context, userID int64) ([]*lesson.Module, map[int64]time.Time, error)
}

// Dashboard computes a learner's numbers. Numbers a route shows are computed
// here, not in HTTP handlers.
type Dashboard struct {
	store   Store
	lessons Curriculum
	now     func() time.Time
}

// NewDashboard returns a Dashboard; now may be nil for the wall clock.
func NewDashboard(store Store, lessons Curriculum, now func() time.Time) *Dashboard {
	if now == nil {
		now = time.Now
	}
	return &Dashboard{store: store, lessons: lessons, now: now}
}

// ModuleProgress is a learner's progress in one module.
type ModuleProgress struct {
	ModuleID  int64
	Title     string
	Completed int
	Total     int
	Percent   int
}

// ExamBest is a learner's best result in one exam.
type ExamBest struct {
	ExamID    int64
	Title     string
	BestScore int
	Passed    bool
	Attempts  int
}

// Stats is a learner's dashboard summary.
type Stats struct {
	ThemesCompleted, ThemesTotal, Percent int
	Modules                               []ModuleProgress
	LabsPassed, LabsAttempted             int
	ExamsPassed, ExamsAttempted           int
	Exams                                 []ExamBest
	SandboxesRunning                      int
	CurrentStreak, LongestStreak          int // days in a row with activity
	LastActiveAt                          *time.Time
}

// percent is part of whole as a whole percentage, rounded down.
func percent(part, whole int) int {
	if whole == 0 {
		return 0
	}
	return part * 100 / whole
}

// Stats computes the user's summary; days of the streaks are days in loc.
func (d *Dashboard) Stats(ctx context.Context, userID int64, loc *time.Location) (*Stats, error) {
	st := &Stats{Modules: []ModuleProgress{}, Exams: []ExamBest{}}
	modules, done, err := d.lessons.Modules(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, m := range modules {
		mp := lesson.ProgressOf(m, done).Progress
		p := ModuleProgress{ModuleID: m.ID, Title: m.Title, Completed: mp.Completed, Total: mp.Total}
		p.Percent = percent(p.Completed, p.Total)
		st.ThemesCompleted += p.Completed
		st.ThemesTotal += p.Total
		st.Modules = append(st.Modules, p)
	}
	st.Percent = percent(st.ThemesCompleted, st.ThemesTotal)

	attempts, err := d.store.FinishedAttempts(ctx, userID)
	if err != nil {
		return nil, err
	}
	labs, labsPassed := map[int64]bool{}, map[int64]bool{}
	exams := map[int64]*ExamBest{}
	var order []int64
	for _, a := range attempts {
		switch a.Kind {
		case "lab":
			labs[a.SubjectID] = true
			if a.Passed {
				labsPassed[a.SubjectID] = true
			}
		case "exam":
			b := exams[a.SubjectID]
			if b == nil {
				b = &ExamBest{ExamID: a.SubjectID, Title: a.Title}
				exams[a.SubjectID] = b
				order = append(order, a.SubjectID)
			}
			b.Attempts++
			b.BestScore = max(b.BestScore, a.Score)
			b.Passed = b.Passed || a.Passed
		}
	}
	st.LabsAttempted, st.LabsPassed = len(labs), len(labsPassed)
	for _, id := range order {
		st.Exams = append(st.Exams, *exams[id])
		st.ExamsAttempted++
		if exams[id].Passed {
			st.ExamsPassed++
		}
	}
	if st.SandboxesRunning, err = d.store.CountRunningSandboxes(ctx, userID); err != nil {
		return nil, err
	}
	buckets, err := d.store.EventBuckets(ctx, userID, time.Time{})
	if err != nil {
		return nil, err
	}
	times := make([]time.Time, len(buckets))
	for i, b := range buckets {
		times[i] = b.Start
	}
	st.CurrentStreak, st.LongestStreak = Streaks(times, d.now(), loc)
	if st.LastActiveAt, err = d.store.LastActive(ctx, userID); err != nil {
		return nil, err
	}
	return st, nil
}

// day is a calendar day in some location, as a count of days since the epoch.
func day(t time.Time, loc *time.Location) int {
	y, m, dd := t.In(loc).Date()
	return int(time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

// Streaks counts days in a row with activity, by the calendar of loc: the
// longest run, and the current one, which is alive while its last day is
// today or yesterday (a learner who has not yet practised today keeps it).
func Streaks(times []time.Time, now time.Time, loc *time.Location) (current, longest int) {
	days := map[int]bool{}
	for _, t := range times {
		days[day(t, loc)] = true
	}
	sorted := make([]int, 0, len(days))
	for d := range days {
		sorted = append(sorted, d)
	}
	sort.Ints(sorted)
	run := 0
	for i, d := range sorted {
		if i > 0 && sorted[i-1] == d-1 {
			run++
		} else {
			run = 1
		}
		longest = max(longest, run)
	}
	today := day(now, loc)
	start := today
	if !days[today] {
		start = today - 1
	}
	for d := start; days[d]; d-- {
		current++
	}
	return current, longest
}

// Page selects a page of a list.
type Page struct{ Number, Size int }

// Activity returns a page of the user's events, newest first, and the total.
func (d *Dashboard) Activity(ctx context.Context, userID int64, kind activity.Kind, p Page) ([]*activity.Event, int, error) {
	if kind != "" && !slices.Contains(activity.Kinds, kind) {
		return nil, 0, errs.Field([]any{"kind"}, "Unknown kind of activity", "enum")
	}
	return d.store.FindEvents(ctx, userID, kind, (p.Number-1)*p.Size, p.Size)
}

// Analytics windows, in days.
const (
	DefaultWindowDays = 30
	MaxWindowDays     = 366
)

// DayCount is the activity of one day.
type DayCount struct {
	Date   string // YYYY-MM-DD in the caller's location
	Events int
}

// ModuleCompletions counts a learner's completed themes in one module.
type ModuleCompletions struct {
	ModuleID  int64
	Title     string
	Completed int
	Total     int
}

// Analytics is a learner's activity over a window of days.
type Analytics struct {
	From, To      string // the window's first and last day
	Days          []DayCount
	Modules       []ModuleCompletions
	Scores        []AttemptSummary // finished attempts in the window, oldest first
	MinutesTotal  int              // estimated time spent, all time
	MinutesWindow int              // estimated time spent within the window
}

// Analytics computes activity per day over the last days days (in loc),
// completions per module, score history and time spent. Time spent is an
// estimate: each completed theme's estimated minutes, plus each finished
// attempt's duration, capped at its time limit.
func (d *Dashboard) Analytics(ctx context.Context, userID int64, days int, loc *time.Location) (*Analytics, error) {
	if days < 1 || days > MaxWindowDays {
		return nil, errs.Field([]any{"days"}, "Input should be between 1 and 366", "range")
	}
	now := d.now().In(loc)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	first := today.AddDate(0, 0, -(days - 1))
	a := &Analytics{From: first.Format(time.DateOnly), To: today.Format(time.DateOnly), Days: make([]DayCount, days),
		Modules: []ModuleCompletions{}, Scores: []AttemptSummary{}}
	index := map[string]int{}
	for i := range a.Days {
		date := first.AddDate(0, 0, i).Format(time.DateOnly)
		a.Days[i] = DayCount{Date: date}
		index[date] = i
	}
	buckets, err := d.store.EventBuckets(ctx, userID, first)
	if err != nil {
		return nil, err
	}
	for _, b := range buckets {
		if i, ok := index[b.Start.In(loc).Format(time.DateOnly)]; ok {
			a.Days[i].Events += b.Events
		}
	}
	modules, done, err := d.lessons.Modules(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, m := range modules {
		mc := ModuleCompletions{ModuleID: m.ID, Title: m.Title, Total: len(m.Themes)}
		for _, t := range m.Themes {
			at, ok := done[t.ID]
			if !ok {
				continue
			}
			mc.Completed++
			a.MinutesTotal += t.EstimatedMinutes
			if !at.Before(first) {
				a.MinutesWindow += t.EstimatedMinutes
			}
		}
		a.Modules = append(a.Modules, mc)
	}
	attempts, err := d.store.FinishedAttempts(ctx, userID)
	if err != nil {
		return nil, err
	}
	for _, at := range attempts {
		spent := at.FinishedAt.Sub(at.StartedAt)
		if limit := time.Duration(at.TimeLimitMinutes) * time.Minute; limit > 0 && spent > limit {
			spent = limit
		}
		minutes := int(spent.Round(time.Minute) / time.Minute)
		a.MinutesTotal += minutes
		if !at.FinishedAt.Before(first) {
			a.MinutesWindow += minutes
			a.Scores = append(a.Scores, at)
		}
	}
	return a, nil
}

// SubjectStats counts the attempts of one exam or lab, for admins.
type SubjectStats struct {
	ID       int64
	Title    string
	Attempts int // started
	Finished int // submitted or expired
	Passed   int
	PassRate int // percent of finished attempts that passed
}

// ThemeCount is how many learners completed a theme.
type ThemeCount struct {
	ThemeID     int64
	Title       string
	Completions int
}

// SystemRows is what the system view reads from the store.
type SystemRows struct {
	ActiveUsers7d, ActiveUsers30d int
	SandboxesByStatus             map[string]int
	Exams, Labs                   []SubjectStats
	MostCompleted, LeastCompleted []ThemeCount
}

// SystemStore reads the rows of the admins' system view.
type SystemStore interface {
	SystemRows(ctx context.Context, now time.Time, themes int) (*SystemRows, error)
}

// System is the admins' view of learning on the platform: users active in the
// last 7 and 30 days, sandboxes by status, attempts and pass rates per exam
// and lab, the most and least completed themes.
func (d *Dashboard) System(ctx context.Context) (*SystemRows, error) {
	rows, err := d.store.SystemRows(ctx, d.now().UTC(), 5)
	if err != nil {
		return nil, err
	}
	for _, list := range [][]SubjectStats{rows.Exams, rows.Labs} {
		for i := range list {
			list[i].PassRate = percent(list[i].Passed, list[i].Finished)
		}
	}
	return rows, nil
}
