package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"tuxlab/internal/actor"
	"tuxlab/internal/exam"
)

// What anyone sees of a question: never its answer, accepted texts or script.
// The *_html fields are the Markdown fields rendered and sanitised (lesson.HTML).
type questionResponse struct {
	ID         int64    `json:"id"`
	Position   int      `json:"position"`
	Kind       string   `json:"kind"`
	Prompt     string   `json:"prompt"`
	PromptHTML string   `json:"prompt_html"`
	Options    []string `json:"options"`
	Points     int      `json:"points"`
}

type examSummaryResponse struct {
	contentHead
	contentBody
	MaxAttempts   int  `json:"max_attempts"`
	MaxPoints     int  `json:"max_points"`
	QuestionCount int  `json:"question_count"`
	HasPractical  bool `json:"has_practical"`
}

type examResponse struct {
	examSummaryResponse
	Questions []questionResponse `json:"questions"`
}

func newExamSummary(e *exam.Exam) examSummaryResponse {
	return examSummaryResponse{contentHead: contentHead{ID: e.ID, Slug: e.Slug, ModuleID: e.ModuleID},
		contentBody: contentBody{TemplateID: e.TemplateID, Title: e.Title, Description: e.Description, DescriptionHTML: e.DescriptionHTML(),
			TimeLimitMinutes: e.TimeLimitMinutes, PassingScore: e.PassingScore},
		MaxAttempts: e.MaxAttempts, MaxPoints: e.MaxPoints(), QuestionCount: len(e.Questions), HasPractical: e.HasPractical()}
}

func newQuestionResponse(q *exam.Question) questionResponse {
	return questionResponse{ID: q.ID, Position: q.Position, Kind: string(q.Kind), Prompt: q.Prompt, PromptHTML: q.PromptHTML(),
		Options: q.Options, Points: q.Points}
}

func newExamResponse(e *exam.Exam) examResponse {
	r := examResponse{examSummaryResponse: newExamSummary(e), Questions: make([]questionResponse, len(e.Questions))}
	for i, q := range e.Questions {
		r.Questions[i] = newQuestionResponse(q)
	}
	return r
}

// What an admin sees: everything.
type adminQuestionResponse struct {
	questionResponse
	Explanation     string   `json:"explanation"`
	ExplanationHTML string   `json:"explanation_html"`
	Answer          *int     `json:"answer"`
	Answers         []int    `json:"answers"`
	Accept          []string `json:"accept"`
	CaseSensitive   bool     `json:"case_sensitive"`
	Check           string   `json:"check"`
	Solution        string   `json:"solution"`
}

type adminExamResponse struct {
	examSummaryResponse
	ownership
	Questions []adminQuestionResponse `json:"questions"`
	CreatedAt timestamp               `json:"created_at"`
	UpdatedAt timestamp               `json:"updated_at"`
}

func newAdminExamResponse(e *exam.Exam) adminExamResponse {
	r := adminExamResponse{examSummaryResponse: newExamSummary(e), ownership: newOwnership(e.Access), Questions: make([]adminQuestionResponse, len(e.Questions)),
		CreatedAt: timestamp(e.CreatedAt), UpdatedAt: timestamp(e.UpdatedAt)}
	for i, q := range e.Questions {
		k := q.Key
		r.Questions[i] = adminQuestionResponse{questionResponse: newQuestionResponse(q), Explanation: q.Explanation,
			ExplanationHTML: q.ExplanationHTML(), Answer: k.Answer,
			Answers: orEmpty(k.Answers), Accept: orEmpty(k.Accept), CaseSensitive: k.CaseSensitive, Check: k.Check, Solution: k.Solution}
	}
	return r
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type examAttemptResponse struct {
	ID     int64  `json:"id"`
	ExamID int64  `json:"exam_id"`
	UserID int64  `json:"user_id"`
	Status string `json:"status"`
	attemptOutcome
}

func newExamAttemptResponse(a *exam.Attempt) examAttemptResponse {
	return examAttemptResponse{ID: a.ID, ExamID: a.ExamID, UserID: a.UserID, Status: string(a.Status),
		attemptOutcome: newAttemptOutcome(&a.Attempt)}
}

// examAttemptDetailResponse is an attempt as its learner works on it: the
// sandbox its practical questions are graded in, and the questions with
// their options in the order this attempt shows (the order answers use).
type examAttemptDetailResponse struct {
	examAttemptResponse
	ContainerID   *int64             `json:"container_id"`
	TerminalURL   *string            `json:"terminal_url"`
	SandboxNotice *string            `json:"sandbox_notice"`
	Questions     []questionResponse `json:"questions"`
	// DraftAnswers are the answers saved so far (PUT .../draft).
	DraftAnswers []exam.Answer `json:"draft_answers"`
}

func newExamAttemptDetail(a *exam.Attempt, e *exam.Exam) examAttemptDetailResponse {
	r := examAttemptDetailResponse{examAttemptResponse: newExamAttemptResponse(a), ContainerID: a.ContainerID,
		Questions: make([]questionResponse, len(e.Questions)), DraftAnswers: orEmpty(a.Draft)}
	if a.ContainerID != nil {
		url := terminalURL(*a.ContainerID)
		notice := fmt.Sprintf("The practical questions of this attempt are graded in sandbox %d, made fresh for it from the exam's template: "+
			"nothing from an earlier attempt or another sandbox is in it, so do every task there.", *a.ContainerID)
		r.TerminalURL, r.SandboxNotice = &url, &notice
	}
	for i, q := range e.Questions {
		r.Questions[i] = newQuestionResponse(a.Shown(q))
	}
	return r
}

type questionResultResponse struct {
	QuestionID      int64    `json:"question_id"`
	Position        int      `json:"position"`
	Kind            string   `json:"kind"`
	Prompt          string   `json:"prompt"`
	PromptHTML      string   `json:"prompt_html"`
	Options         []string `json:"options"`
	Correct         bool     `json:"correct"`
	Points          int      `json:"points"`
	MaxPoints       int      `json:"max_points"`
	Explanation     string   `json:"explanation"`
	ExplanationHTML string   `json:"explanation_html"`
	Feedback        []string `json:"feedback"`
	Output          *string  `json:"output,omitempty"` // admins only
}

type examResultsResponse struct {
	examAttemptResponse
	ExamTitle string                   `json:"exam_title"`
	Questions []questionResultResponse `json:"questions"`
}

// newExamResults shows a graded attempt: per question right or not, and why.
func newExamResults(a *exam.Attempt, e *exam.Exam, admin bool) examResultsResponse {
	byID := map[int64]*exam.Question{}
	for _, q := range e.Questions {
		byID[q.ID] = q
	}
	r := examResultsResponse{examAttemptResponse: newExamAttemptResponse(a), ExamTitle: e.Title, Questions: make([]questionResultResponse, 0, len(a.Results))}
	for _, res := range a.Results {
		qr := questionResultResponse{QuestionID: res.QuestionID, Position: res.Position, Kind: string(res.Kind), Correct: res.Correct,
			Points: res.Points, MaxPoints: res.MaxPoints, Feedback: orEmpty(res.Feedback), Options: []string{}}
		if q := byID[res.QuestionID]; q != nil {
			qr.Prompt, qr.Explanation, qr.Options = q.Prompt, q.Explanation, a.Shown(q).Options
			qr.PromptHTML, qr.ExplanationHTML = q.PromptHTML(), q.ExplanationHTML()
		}
		if admin && res.Output != "" {
			out := res.Output
			qr.Output = &out
		}
		r.Questions = append(r.Questions, qr)
	}
	return r
}

func (s *Server) handleExams(w http.ResponseWriter, r *http.Request) error {
	return writeAll(w, r, s.exams.Exams, newExamSummary)
}

func (s *Server) handleExam(w http.ResponseWriter, r *http.Request) error {
	return writeOne(w, r, s.exams.Exam, newExamResponse)
}

func (s *Server) handleExamStart(w http.ResponseWriter, r *http.Request) error {
	return serveAttempt(w, r, http.StatusCreated, s.exams.Start, newExamAttemptDetail)
}

func (s *Server) handleExamAttempt(w http.ResponseWriter, r *http.Request) error {
	return serveAttempt(w, r, http.StatusOK, s.exams.Attempt, newExamAttemptDetail)
}

// submitExamRequest is a learner's answers.
type submitExamRequest struct {
	Answers     []exam.Answer `json:"answers"`
	ContainerID *int64        `json:"container_id"`
}

func (s *Server) handleExamSubmit(w http.ResponseWriter, r *http.Request) error {
	submit := func(ctx context.Context, a actor.Actor, id int64) (*exam.Attempt, *exam.Exam, error) {
		var body submitExamRequest
		if err := decodeJSON(r, &body); err != nil {
			return nil, nil, err
		}
		at, e, err := s.exams.Submit(ctx, a, id, exam.Submission{Answers: body.Answers, ContainerID: body.ContainerID})
		return at, e, locate(err)
	}
	return serveAttempt(w, r, http.StatusOK, submit, examResultsView(r))
}

func (s *Server) handleExamResults(w http.ResponseWriter, r *http.Request) error {
	return serveAttempt(w, r, http.StatusOK, s.exams.Results, examResultsView(r))
}

// examResultsView shows a graded attempt as the caller of r may see it.
func examResultsView(r *http.Request) func(*exam.Attempt, *exam.Exam) examResultsResponse {
	admin := isAdmin(r)
	return func(a *exam.Attempt, e *exam.Exam) examResultsResponse { return newExamResults(a, e, admin) }
}

// Admin authoring.

var examQueryParams = []string{"slug", "title", "module_id", "template_id", "time_limit_minutes", "passing_score", "max_attempts", "published"}

type examBody struct {
	Description *string               `json:"description" yaml:"description"`
	Questions   *[]exam.QuestionInput `json:"questions" yaml:"questions"`
	Published   *bool                 `json:"published" yaml:"published"`
}

func examInput(r *http.Request) (exam.Input, error) {
	q := newQuery(r)
	in := exam.Input{Slug: q.optStr("slug"), Title: q.optStr("title"),
		TimeLimitMinutes: q.optInt("time_limit_minutes", 1, exam.MaxTimeLimit), PassingScore: q.optInt("passing_score", 0, 100),
		MaxAttempts: q.optInt("max_attempts", 0, exam.MaxAttemptsLimit), ModuleID: q.optID("module_id"), TemplateID: q.optID("template_id"),
		Published: q.optBool("published")}
	if err := q.err(); err != nil {
		return in, err
	}
	var b examBody
	_, err := decodeContentBody(r, &b)
	if err != nil {
		return in, err
	}
	in.Description = b.Description
	if in.Published, err = onePublished(in.Published, b.Published); err != nil {
		return in, err
	}
	if b.Questions != nil {
		in.Questions = orEmpty(*b.Questions)
	}
	return in, nil
}

// examAdmin is the admin CRUD of exams.
func (s *Server) examAdmin() contentAdmin[*exam.Exam, exam.Input, adminExamResponse] {
	return contentAdmin[*exam.Exam, exam.Input, adminExamResponse]{
		all: s.exams.Mine, one: s.exams.Authored, create: s.exams.Create, update: s.exams.Update, remove: s.exams.Delete,
		input: examInput, respond: newAdminExamResponse, query: examQueryParams, deleted: "Exam deleted",
	}
}
