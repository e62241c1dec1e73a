package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tuxlab/internal/actor"
	"tuxlab/internal/class"
	"tuxlab/internal/errs"
)

// classRoutes are the routes of classes, their learners and assignments
// (docs/classes.md).
func (s *Server) classRoutes() []route {
	return []route{
		{"GET", "/api/classes", user, s.handleClasses, docClasses},
		{"POST", "/api/classes", instructor, s.handleCreateClass, docCreateClass},
		{"POST", "/api/classes/join", user, s.handleJoinClass, docJoinClass},
		{"GET", "/api/classes/{id}", user, s.handleClass, docClass},
		{"DELETE", "/api/classes/{id}", instructor, s.classStep(s.classes.Delete, "Class deleted"), docDeleteClass},
		{"POST", "/api/classes/{id}/code", instructor, s.handleRotateClassCode, docRotateClassCode},
		{"DELETE", "/api/classes/{id}/membership", user, s.classStep(s.classes.Leave, "You left the class"), docLeaveClass},
		{"GET", "/api/classes/{id}/learners", instructor, s.handleClassLearners, docClassLearners},
		{"GET", "/api/classes/{id}/learners.csv", instructor, s.handleClassLearnersCSV, docClassLearnersCSV},
		{"DELETE", "/api/classes/{id}/learners/{user_id}", instructor, s.handleRemoveLearner, docRemoveLearner},
		{"GET", "/api/classes/{id}/assignments", user, s.handleAssignments, docAssignments},
		{"POST", "/api/classes/{id}/assignments", instructor, s.handleCreateAssignment, docCreateAssignment},
		{"DELETE", "/api/classes/{id}/assignments/{assignment_id}", instructor, s.handleDeleteAssignment, docDeleteAssignment},
		{"GET", "/api/dashboard/assignments", user, s.handleDashboardAssignments, docDashboardAssignments},
	}
}

// classResponse is a class as its caller may see it: the join code and the
// number of learners only for its teacher.
type classResponse struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	Teacher      string    `json:"teacher"`
	JoinCode     *string   `json:"join_code"`
	LearnerCount *int      `json:"learner_count"`
	CreatedAt    timestamp `json:"created_at"`
}

func newClassResponse(m *class.Membership) classResponse {
	out := classResponse{ID: m.ID, Name: m.Name, Role: "learner", Teacher: m.OwnerName, CreatedAt: timestamp(m.CreatedAt)}
	if m.Teaching {
		code, n := m.JoinCode, m.Learners
		out.Role, out.JoinCode, out.LearnerCount = "teacher", &code, &n
	}
	return out
}

func (s *Server) handleClasses(w http.ResponseWriter, r *http.Request) error {
	ms, err := s.classes.Classes(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	out := make([]classResponse, len(ms))
	for i, m := range ms {
		out[i] = newClassResponse(m)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type classRequest struct {
	Name *string `json:"name"`
}

func (s *Server) handleCreateClass(w http.ResponseWriter, r *http.Request) error {
	var req classRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "name", req.Name)
	if err := f.Err(); err != nil {
		return err
	}
	c, err := s.classes.Create(r.Context(), callerOf(r), *req.Name)
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusCreated, newClassResponse(&class.Membership{Class: c, Teaching: true}))
	return nil
}

type joinRequest struct {
	Code *string `json:"code"`
}

func (s *Server) handleJoinClass(w http.ResponseWriter, r *http.Request) error {
	var req joinRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "code", req.Code)
	if err := f.Err(); err != nil {
		return err
	}
	m, joined, err := s.classes.Join(r.Context(), callerOf(r), *req.Code)
	if err != nil {
		return errs.In("body", err)
	}
	status := http.StatusOK
	if joined {
		status = http.StatusCreated
	}
	writeJSON(w, status, newClassResponse(m))
	return nil
}

func (s *Server) handleClass(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	m, err := s.classes.Class(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newClassResponse(m))
	return nil
}

// classStep returns the handler of a route that does one thing to class
// {id} for its caller and answers with detail and the class's id.
func (s *Server) classStep(do func(ctx context.Context, caller actor.Actor, id int64) error, detail string) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id")
		if err != nil {
			return err
		}
		if err := do(r.Context(), callerOf(r), id); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"detail": detail, "id": id})
		return nil
	}
}

func (s *Server) handleRotateClassCode(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	c, err := s.classes.RotateCode(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newClassResponse(&class.Membership{Class: c, Teaching: true}))
	return nil
}

func (s *Server) handleRemoveLearner(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	userID, err := pathID(r, "user_id")
	if err != nil {
		return err
	}
	if err := s.classes.RemoveLearner(r.Context(), callerOf(r), id, userID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Learner removed from the class", "id": userID})
	return nil
}

// learnersQuery reads the learners view's sort, order and days parameters.
func learnersQuery(q *query) class.LearnersQuery {
	lq := class.LearnersQuery{Sort: class.ByName, Days: q.int("days", class.DefaultActivityDays, 1, class.MaxActivityDays)}
	if v, ok := q.str("sort"); ok {
		if lq.Sort, ok = class.ParseSort(v); !ok {
			q.fields.Add([]any{"query", "sort"}, "Sort must be one of name, progress, last_active", "enum")
		}
	}
	if v, ok := q.str("order"); ok {
		switch v {
		case "asc":
		case "desc":
			lq.Desc = true
		default:
			q.fields.Add([]any{"query", "order"}, "Order must be asc or desc", "enum")
		}
	}
	return lq
}

type progressCountResponse struct {
	Completed int `json:"completed"`
	Total     int `json:"total"`
	Percent   int `json:"percent"`
}

type classTaskResponse struct {
	TaskID   int64  `json:"task_id"`
	Position int    `json:"position"`
	Title    string `json:"title"`
	Passed   bool   `json:"passed"`
	Points   int    `json:"points"`
}

type labRecordResponse struct {
	AttemptID  int64               `json:"attempt_id"`
	LabID      int64               `json:"lab_id"`
	Title      string              `json:"title"`
	Status     string              `json:"status"`
	StartedAt  timestamp           `json:"started_at"`
	FinishedAt *timestamp          `json:"finished_at"`
	Score      int                 `json:"score"`
	Passed     bool                `json:"passed"`
	Tasks      []classTaskResponse `json:"tasks"`
}

type examRecordResponse struct {
	AttemptID  int64      `json:"attempt_id"`
	ExamID     int64      `json:"exam_id"`
	Title      string     `json:"title"`
	Status     string     `json:"status"`
	StartedAt  timestamp  `json:"started_at"`
	FinishedAt *timestamp `json:"finished_at"`
	Score      int        `json:"score"`
	Passed     bool       `json:"passed"`
}

type learnerActivityResponse struct {
	Days         int        `json:"days"`
	Events       int        `json:"events"`
	LastActiveAt *timestamp `json:"last_active_at"`
}

type learnerResponse struct {
	UserID   int64                    `json:"user_id"`
	Username string                   `json:"username"`
	JoinedAt timestamp                `json:"joined_at"`
	Progress progressCountResponse    `json:"progress"`
	Modules  []moduleProgressResponse `json:"modules"`
	Labs     []labRecordResponse      `json:"labs"`
	Exams    []examRecordResponse     `json:"exams"`
	Activity learnerActivityResponse  `json:"activity"`
}

func newLabRecordResponse(a class.AttemptRecord) labRecordResponse {
	out := labRecordResponse{AttemptID: a.ID, LabID: a.ItemID, Title: a.Title, Status: a.Status, StartedAt: timestamp(a.StartedAt),
		FinishedAt: optTime(a.FinishedAt), Score: a.Score, Passed: a.Passed, Tasks: make([]classTaskResponse, len(a.Tasks))}
	for i, t := range a.Tasks {
		out.Tasks[i] = classTaskResponse(t)
	}
	return out
}

func newLearnerResponse(l *class.Learner, days int) learnerResponse {
	out := learnerResponse{UserID: l.UserID, Username: l.Username, JoinedAt: timestamp(l.JoinedAt),
		Progress: progressCountResponse{l.Completed, l.Total, l.Percent}, Modules: make([]moduleProgressResponse, len(l.Modules)),
		Labs: make([]labRecordResponse, len(l.Labs)), Exams: make([]examRecordResponse, len(l.Exams)),
		Activity: learnerActivityResponse{Days: days, Events: l.EventsInWindow, LastActiveAt: optTime(l.LastActiveAt)}}
	for i, m := range l.Modules {
		out.Modules[i] = moduleProgressResponse(m)
	}
	for i, a := range l.Labs {
		out.Labs[i] = newLabRecordResponse(a)
	}
	for i, a := range l.Exams {
		out.Exams[i] = examRecordResponse{AttemptID: a.ID, ExamID: a.ItemID, Title: a.Title, Status: a.Status, StartedAt: timestamp(a.StartedAt),
			FinishedAt: optTime(a.FinishedAt), Score: a.Score, Passed: a.Passed}
	}
	return out
}

func (s *Server) handleClassLearners(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	page := readPage(q)
	lq := learnersQuery(q)
	if err := q.err(); err != nil {
		return err
	}
	lq.Offset, lq.Limit = (page.Number-1)*page.Size, page.Size
	p, err := s.classes.Learners(r.Context(), callerOf(r), id, lq)
	if err != nil {
		return err
	}
	out := make([]learnerResponse, len(p.Learners))
	for i, l := range p.Learners {
		out[i] = newLearnerResponse(l, lq.Days)
	}
	setPageHeaders(w, r, page, p.Total)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// csvCell makes a cell safe to open in a spreadsheet: one starting with a
// character that starts a formula (=, +, -, @, or a tab or carriage return
// some programs skip first) is prefixed with a quote, so it stays text.
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}

// learnersCSV renders the learners view as CSV: a header row, then one row
// per learner.
func learnersCSV(p *class.LearnersPage, days int) ([]byte, error) {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	header := []string{"username", "joined_at", "themes_completed", "themes_total", "progress_percent"}
	if len(p.Learners) > 0 {
		for _, m := range p.Learners[0].Modules {
			header = append(header, "module: "+m.Title+" (%)")
		}
	}
	header = append(header, "labs_attempted", "labs_passed", "lab_best_scores", "exams_attempted", "exams_passed", "exam_best_scores",
		fmt.Sprintf("events_last_%d_days", days), "last_active_at")
	rows := [][]string{header}
	for _, l := range p.Learners {
		row := []string{l.Username, l.JoinedAt.UTC().Format(time.RFC3339), strconv.Itoa(l.Completed), strconv.Itoa(l.Total), strconv.Itoa(l.Percent)}
		for _, m := range l.Modules {
			row = append(row, strconv.Itoa(m.Percent))
		}
		labsTried, labsPassed, labBest := bestScores(l.Labs)
		examsTried, examsPassed, examBest := bestScores(l.Exams)
		last := ""
		if l.LastActiveAt != nil {
			last = l.LastActiveAt.UTC().Format(time.RFC3339)
		}
		row = append(row, strconv.Itoa(labsTried), strconv.Itoa(labsPassed), labBest, strconv.Itoa(examsTried), strconv.Itoa(examsPassed), examBest,
			strconv.Itoa(l.EventsInWindow), last)
		rows = append(rows, row)
	}
	for _, row := range rows {
		for i := range row {
			row[i] = csvCell(row[i])
		}
	}
	if err := cw.WriteAll(rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bestScores summarises attempts: items finished, items passed, and each
// item's best score as "title: score" joined with "; ".
func bestScores(attempts []class.AttemptRecord) (tried, passed int, best string) {
	type item struct {
		title  string
		score  int
		passed bool
	}
	var order []int64
	items := map[int64]*item{}
	for _, a := range attempts {
		if a.FinishedAt == nil {
			continue
		}
		it := items[a.ItemID]
		if it == nil {
			it = &item{title: a.Title}
			items[a.ItemID] = it
			order = append(order, a.ItemID)
		}
		it.score, it.passed = max(it.score, a.Score), it.passed || a.Passed
	}
	parts := make([]string, len(order))
	for i, id := range order {
		it := items[id]
		if it.passed {
			passed++
		}
		parts[i] = fmt.Sprintf("%s: %d", it.title, it.score)
	}
	return len(order), passed, strings.Join(parts, "; ")
}

func (s *Server) handleClassLearnersCSV(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	lq := learnersQuery(q)
	if err := q.err(); err != nil {
		return err
	}
	p, err := s.classes.Learners(r.Context(), callerOf(r), id, lq)
	if err != nil {
		return err
	}
	body, err := learnersCSV(p, lq.Days)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="class-%d-learners.csv"`, id))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return nil
}

type assignmentResponse struct {
	ID        int64     `json:"id"`
	ClassID   int64     `json:"class_id"`
	Kind      string    `json:"kind"`
	ItemID    int64     `json:"item_id"`
	Title     string    `json:"title"`
	DueAt     timestamp `json:"due_at"`
	CreatedAt timestamp `json:"created_at"`
}

func newAssignmentResponse(a *class.Assignment) assignmentResponse {
	return assignmentResponse{ID: a.ID, ClassID: a.ClassID, Kind: string(a.Kind), ItemID: a.ItemID, Title: a.Title,
		DueAt: timestamp(a.DueAt), CreatedAt: timestamp(a.CreatedAt)}
}

type assignmentRequest struct {
	Kind   *string `json:"kind"`
	ItemID *int64  `json:"item_id"`
	DueAt  *string `json:"due_at"`
}

func (s *Server) handleCreateAssignment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var req assignmentRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "kind", req.Kind)
	requireField(&f, "item_id", req.ItemID)
	requireField(&f, "due_at", req.DueAt)
	var due time.Time
	if req.DueAt != nil {
		if due, err = time.Parse(time.RFC3339, *req.DueAt); err != nil {
			f.Add([]any{"body", "due_at"}, "Input should be a date and time such as 2026-12-01T18:00:00Z", "datetime_parsing")
		}
	}
	if err := f.Err(); err != nil {
		return err
	}
	a, err := s.classes.Assign(r.Context(), callerOf(r), id, class.NewAssignment{Kind: class.Kind(*req.Kind), ItemID: *req.ItemID, DueAt: due})
	if err != nil {
		return errs.In("body", err)
	}
	writeJSON(w, http.StatusCreated, newAssignmentResponse(a))
	return nil
}

func (s *Server) handleAssignments(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	as, err := s.classes.Assignments(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	out := make([]assignmentResponse, len(as))
	for i, a := range as {
		out[i] = newAssignmentResponse(a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleDeleteAssignment(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	aid, err := pathID(r, "assignment_id")
	if err != nil {
		return err
	}
	if err := s.classes.Unassign(r.Context(), callerOf(r), id, aid); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Assignment deleted", "id": aid})
	return nil
}

type learnerAssignmentResponse struct {
	assignmentResponse
	ClassName string `json:"class_name"`
	Done      bool   `json:"done"`
	Passed    bool   `json:"passed"`
	Overdue   bool   `json:"overdue"`
}

func (s *Server) handleDashboardAssignments(w http.ResponseWriter, r *http.Request) error {
	as, err := s.classes.LearnerAssignments(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	out := make([]learnerAssignmentResponse, len(as))
	for i, a := range as {
		out[i] = learnerAssignmentResponse{assignmentResponse: newAssignmentResponse(&a.Assignment), ClassName: a.ClassName,
			Done: a.Done, Passed: a.Passed, Overdue: a.Overdue}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
