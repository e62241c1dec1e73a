package httpapi

import (
	"net/http"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/auth"
	"tuxlab/internal/dashboard"
)

// dashboardRoutes are the routes of the caller's dashboard.
func (s *Server) dashboardRoutes() []route {
	return []route{
		{"GET", "/api/dashboard/stats", user, s.handleDashboardStats, docDashboardStats},
		{"GET", "/api/dashboard/activity", user, s.handleDashboardActivity, docDashboardActivity},
		{"GET", "/api/dashboard/analytics", user, s.handleDashboardAnalytics, docDashboardAnalytics},
	}
}

// location reads the tz parameter: an IANA time zone the days are counted
// in (default UTC).
func location(q *query) *time.Location {
	name, ok := q.str("tz")
	if !ok || name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil || len(name) > 64 {
		q.fields.Add([]any{"query", "tz"}, "Input should be an IANA time zone such as Europe/Berlin", "value_error")
		return time.UTC
	}
	return loc
}

type moduleProgressResponse struct {
	ModuleID  int64  `json:"module_id"`
	Title     string `json:"title"`
	Completed int    `json:"completed"`
	Total     int    `json:"total"`
	Percent   int    `json:"percent"`
}

type examBestResponse struct {
	ExamID    int64  `json:"exam_id"`
	Title     string `json:"title"`
	BestScore int    `json:"best_score"`
	Passed    bool   `json:"passed"`
	Attempts  int    `json:"attempts"`
}

type dashboardStatsResponse struct {
	Themes struct {
		Completed int `json:"completed"`
		Total     int `json:"total"`
		Percent   int `json:"percent"`
	} `json:"themes"`
	Modules []moduleProgressResponse `json:"modules"`
	Labs    struct {
		Passed    int `json:"passed"`
		Attempted int `json:"attempted"`
	} `json:"labs"`
	Exams struct {
		Passed    int                `json:"passed"`
		Attempted int                `json:"attempted"`
		Best      []examBestResponse `json:"best"`
	} `json:"exams"`
	SandboxesRunning int `json:"sandboxes_running"`
	Streak           struct {
		Current int `json:"current"`
		Longest int `json:"longest"`
	} `json:"streak"`
	LastActiveAt *timestamp `json:"last_active_at"`
}

func (s *Server) handleDashboardStats(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	loc := location(q)
	if err := q.err(); err != nil {
		return err
	}
	st, err := s.dashboard.Stats(r.Context(), currentUser(r).ID, loc)
	if err != nil {
		return err
	}
	var out dashboardStatsResponse
	out.Themes.Completed, out.Themes.Total, out.Themes.Percent = st.ThemesCompleted, st.ThemesTotal, st.Percent
	out.Modules = make([]moduleProgressResponse, len(st.Modules))
	for i, m := range st.Modules {
		out.Modules[i] = moduleProgressResponse(m)
	}
	out.Labs.Passed, out.Labs.Attempted = st.LabsPassed, st.LabsAttempted
	out.Exams.Passed, out.Exams.Attempted = st.ExamsPassed, st.ExamsAttempted
	out.Exams.Best = make([]examBestResponse, len(st.Exams))
	for i, e := range st.Exams {
		out.Exams.Best[i] = examBestResponse(e)
	}
	out.SandboxesRunning = st.SandboxesRunning
	out.Streak.Current, out.Streak.Longest = st.CurrentStreak, st.LongestStreak
	out.LastActiveAt = optTime(st.LastActiveAt)
	writeJSON(w, http.StatusOK, out)
	return nil
}

type eventResponse struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	At        timestamp `json:"at"`
	SubjectID *int64    `json:"subject_id"`
	Title     string    `json:"title"`
	ModuleID  *int64    `json:"module_id"`
	Score     *int      `json:"score"`
	Passed    *bool     `json:"passed"`
}

func (s *Server) handleDashboardActivity(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	page := readPage(q)
	kind, _ := q.str("kind")
	if err := q.err(); err != nil {
		return err
	}
	events, total, err := s.dashboard.Activity(r.Context(), currentUser(r).ID, activity.Kind(kind), dashboard.Page(page))
	if err != nil {
		return locate(err, "kind")
	}
	out := make([]eventResponse, len(events))
	for i, e := range events {
		out[i] = eventResponse{ID: e.ID, Kind: string(e.Kind), At: timestamp(e.At), Title: e.Title, ModuleID: e.ModuleID, Score: e.Score, Passed: e.Passed}
		if e.SubjectID != 0 {
			out[i].SubjectID = &e.SubjectID
		}
	}
	setPageHeaders(w, r, auth.Page(page), total)
	writeJSON(w, http.StatusOK, out)
	return nil
}

type dayCountResponse struct {
	Date   string `json:"date"`
	Events int    `json:"events"`
}

type moduleCompletionsResponse struct {
	ModuleID  int64  `json:"module_id"`
	Title     string `json:"title"`
	Completed int    `json:"completed"`
	Total     int    `json:"total"`
}

type scoreResponse struct {
	Kind       string    `json:"kind"`
	SubjectID  int64     `json:"subject_id"`
	Title      string    `json:"title"`
	FinishedAt timestamp `json:"finished_at"`
	Status     string    `json:"status"`
	Score      int       `json:"score"`
	Passed     bool      `json:"passed"`
}

type analyticsResponse struct {
	From          string                      `json:"from"`
	To            string                      `json:"to"`
	TimeZone      string                      `json:"tz"`
	Days          []dayCountResponse          `json:"days"`
	Modules       []moduleCompletionsResponse `json:"completions_by_module"`
	Scores        []scoreResponse             `json:"score_history"`
	MinutesWindow int                         `json:"minutes_in_window"`
	MinutesTotal  int                         `json:"minutes_total"`
}

func (s *Server) handleDashboardAnalytics(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	days := q.int("days", dashboard.DefaultWindowDays, 1, dashboard.MaxWindowDays)
	loc := location(q)
	if err := q.err(); err != nil {
		return err
	}
	a, err := s.dashboard.Analytics(r.Context(), currentUser(r).ID, days, loc)
	if err != nil {
		return locate(err, "days")
	}
	out := analyticsResponse{From: a.From, To: a.To, TimeZone: loc.String(), Days: make([]dayCountResponse, len(a.Days)),
		Modules: make([]moduleCompletionsResponse, len(a.Modules)), Scores: make([]scoreResponse, len(a.Scores)),
		MinutesWindow: a.MinutesWindow, MinutesTotal: a.MinutesTotal}
	for i, d := range a.Days {
		out.Days[i] = dayCountResponse(d)
	}
	for i, m := range a.Modules {
		out.Modules[i] = moduleCompletionsResponse(m)
	}
	for i, sc := range a.Scores {
		out.Scores[i] = scoreResponse{Kind: sc.Kind, SubjectID: sc.SubjectID, Title: sc.Title, FinishedAt: timestamp(sc.FinishedAt),
			Status: sc.Status, Score: sc.Score, Passed: sc.Passed}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
