package httpapi

import (
	"net/http"

	"tuxlab/internal/errs"
	"tuxlab/internal/exam"
	"tuxlab/internal/lab"
)

// labAttemptSummary is what the progress view shows of a lab attempt: its
// state and per task whether it passed, no feedback or output.
type labAttemptSummary struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	ContainerID *int64 `json:"container_id"`
	attemptOutcome
	Tasks []taskPassedState `json:"tasks"`
}

type taskPassedState struct {
	TaskID   int64 `json:"task_id"`
	Position int   `json:"position"`
	Passed   bool  `json:"passed"`
}

func newLabAttemptSummary(a *lab.Attempt) *labAttemptSummary {
	if a == nil {
		return nil
	}
	r := &labAttemptSummary{ID: a.ID, Status: string(a.Status), ContainerID: a.ContainerID,
		attemptOutcome: newAttemptOutcome(&a.Attempt), Tasks: make([]taskPassedState, len(a.Results))}
	for i, t := range a.Results {
		r.Tasks[i] = taskPassedState{TaskID: t.TaskID, Position: t.Position, Passed: t.Passed}
	}
	return r
}

type labProgressResponse struct {
	LaboratoryID int64              `json:"laboratory_id"`
	ModuleID     *int64             `json:"module_id"`
	Title        string             `json:"title"`
	Attempts     int                `json:"attempts"`
	Passed       bool               `json:"passed"`
	BestScore    *int               `json:"best_score"`
	Latest       *labAttemptSummary `json:"latest"`
	Best         *labAttemptSummary `json:"best"`
}

type examProgressResponse struct {
	ExamID              int64      `json:"exam_id"`
	ModuleID            *int64     `json:"module_id"`
	Title               string     `json:"title"`
	MaxAttempts         int        `json:"max_attempts"`
	AttemptsUsed        int        `json:"attempts_used"`
	AttemptsLeft        *int       `json:"attempts_left"`
	BestScore           *int       `json:"best_score"`
	BestAttemptID       *int64     `json:"best_attempt_id"`
	Passed              bool       `json:"passed"`
	InProgressAttemptID *int64     `json:"in_progress_attempt_id"`
	InProgressExpiresAt *timestamp `json:"in_progress_expires_at"`
}

type learnerProgressResponse struct {
	Laboratories []labProgressResponse  `json:"laboratories"`
	Exams        []examProgressResponse `json:"exams"`
}

func newLabProgress(p lab.Progress) labProgressResponse {
	r := labProgressResponse{LaboratoryID: p.Lab.ID, ModuleID: p.Lab.ModuleID, Title: p.Lab.Title, Attempts: p.Attempts, Passed: p.Passed,
		Latest: newLabAttemptSummary(p.Latest), Best: newLabAttemptSummary(p.Best)}
	if p.Best != nil {
		r.BestScore = &p.Best.Score
	}
	return r
}

func newExamProgress(p exam.Progress) examProgressResponse {
	r := examProgressResponse{ExamID: p.Exam.ID, ModuleID: p.Exam.ModuleID, Title: p.Exam.Title, MaxAttempts: p.Exam.MaxAttempts,
		AttemptsUsed: p.Used, Passed: p.Passed}
	if p.Left >= 0 {
		r.AttemptsLeft = &p.Left
	}
	if p.Best != nil {
		r.BestScore, r.BestAttemptID = &p.Best.Score, &p.Best.ID
	}
	if p.Open != nil {
		r.InProgressAttemptID, r.InProgressExpiresAt = &p.Open.ID, optTime(&p.Open.ExpiresAt)
	}
	return r
}

// handleProgress answers with the caller's own standing in every laboratory
// and exam.
func (s *Server) handleProgress(w http.ResponseWriter, r *http.Request) error {
	labs, err := s.labs.Progress(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	exams, err := s.exams.Progress(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	out := learnerProgressResponse{Laboratories: make([]labProgressResponse, len(labs)), Exams: make([]examProgressResponse, len(exams))}
	for i, p := range labs {
		out.Laboratories[i] = newLabProgress(p)
	}
	for i, p := range exams {
		out.Exams[i] = newExamProgress(p)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// draftRequest is the answers given so far, in the submit's shape.
type draftRequest struct {
	Answers *[]exam.Answer `json:"answers"`
}

// draftResponse says what was saved and when.
type draftResponse struct {
	AttemptID    int64         `json:"attempt_id"`
	DraftAnswers []exam.Answer `json:"draft_answers"`
	SavedAt      timestamp     `json:"saved_at"`
}

func (s *Server) handleExamDraft(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var body draftRequest
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var f errs.Fields
	requireField(&f, "answers", body.Answers)
	if err := f.Err(); err != nil {
		return err
	}
	a, _, err := s.exams.SaveDraft(r.Context(), callerOf(r), id, *body.Answers)
	if err != nil {
		return locate(err)
	}
	writeJSON(w, http.StatusOK, draftResponse{AttemptID: a.ID, DraftAnswers: orEmpty(a.Draft), SavedAt: timestamp(*a.DraftSavedAt)})
	return nil
}
