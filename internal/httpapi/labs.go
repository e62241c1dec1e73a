package httpapi

import (
	"context"
	"net/http"

	"tuxlab/internal/actor"
	"tuxlab/internal/auth"
	"tuxlab/internal/lab"
	"tuxlab/internal/recording"
)

// What a learner or anyone sees of a lab: never a script or a solution.
// The *_html fields are the Markdown fields rendered and sanitised (lesson.HTML).
type taskResponse struct {
	ID              int64  `json:"id"`
	Position        int    `json:"position"`
	Title           string `json:"title"`
	Description     string `json:"description"`
	DescriptionHTML string `json:"description_html"`
	Hint            string `json:"hint"`
	HintHTML        string `json:"hint_html"`
	Points          int    `json:"points"`
	Machine         string `json:"machine"`
}

// labMachineResponse is what anyone sees of a lab's machine: its name.
type labMachineResponse struct {
	Name string `json:"name"`
}

type labResponse struct {
	contentHead
	SectionID *int64 `json:"section_id"`
	contentBody
	MaxPoints int                  `json:"max_points"`
	Machines  []labMachineResponse `json:"machines"`
	Tasks     []taskResponse       `json:"tasks"`
}

func newLabResponse(l *lab.Lab) labResponse {
	r := labResponse{contentHead: contentHead{ID: l.ID, Slug: l.Slug, ModuleID: l.ModuleID}, SectionID: l.ModuleID,
		contentBody: contentBody{TemplateID: &l.TemplateID, Title: l.Title, Description: l.Description, DescriptionHTML: l.DescriptionHTML(),
			TimeLimitMinutes: l.TimeLimitMinutes, PassingScore: l.PassingScore},
		MaxPoints: l.MaxPoints(), Machines: make([]labMachineResponse, len(l.Machines)), Tasks: make([]taskResponse, len(l.Tasks))}
	for i, m := range l.Machines {
		r.Machines[i] = labMachineResponse{Name: m.Name}
	}
	for i, t := range l.Tasks {
		r.Tasks[i] = taskResponse{ID: t.ID, Position: t.Position, Title: t.Title, Description: t.Description, DescriptionHTML: t.DescriptionHTML(),
			Hint: t.Hint, HintHTML: t.HintHTML(), Points: t.Points, Machine: t.Machine}
	}
	return r
}

// What an admin sees of a lab: everything.
type adminTaskResponse struct {
	taskResponse
	Check string `json:"check"`
}

type adminLabResponse struct {
	labResponse
	ownership
	Setup     string              `json:"setup"`
	Solution  string              `json:"solution"`
	Machines  []lab.Machine       `json:"machines"`
	Tasks     []adminTaskResponse `json:"tasks"`
	CreatedAt timestamp           `json:"created_at"`
	UpdatedAt timestamp           `json:"updated_at"`
}

func newAdminLabResponse(l *lab.Lab) adminLabResponse {
	r := adminLabResponse{labResponse: newLabResponse(l), ownership: newOwnership(l.Access), Setup: l.Setup, Solution: l.Solution, Machines: l.Machines,
		Tasks: make([]adminTaskResponse, len(l.Tasks)), CreatedAt: timestamp(l.CreatedAt), UpdatedAt: timestamp(l.UpdatedAt)}
	if r.Machines == nil {
		r.Machines = []lab.Machine{}
	}
	for i, t := range l.Tasks {
		r.Tasks[i] = adminTaskResponse{taskResponse: r.labResponse.Tasks[i], Check: t.Check}
	}
	return r
}

type taskResultResponse struct {
	TaskID   int64    `json:"task_id"`
	Position int      `json:"position"`
	Title    string   `json:"title"`
	Passed   bool     `json:"passed"`
	Points   int      `json:"points"`
	Feedback []string `json:"feedback"`
	// Admins only.
	ExitCode *int    `json:"exit_code,omitempty"`
	TimedOut *bool   `json:"timed_out,omitempty"`
	Output   *string `json:"output,omitempty"`
}

type labAttemptResponse struct {
	ID           int64   `json:"id"`
	LaboratoryID int64   `json:"laboratory_id"`
	UserID       int64   `json:"user_id"`
	Status       string  `json:"status"`
	ContainerID  *int64  `json:"container_id"`
	TerminalURL  *string `json:"terminal_url"`
	// Machines are a lab's machines with their sandboxes; empty for one sandbox.
	Machines []attemptMachineResponse `json:"machines"`
	attemptOutcome
	Checks      int        `json:"checks"`
	LastCheckAt *timestamp `json:"last_check_at"`
	Checking    bool       `json:"checking"`
	// SandboxRemovedAt says when the lab removed the sandbox of the ended attempt.
	SandboxRemovedAt *timestamp           `json:"sandbox_removed_at"`
	Tasks            []taskResultResponse `json:"tasks"`
	// RecordingID is the latest recording of the attempt's terminal, if any.
	RecordingID *int64 `json:"recording_id"`
}

type attemptMachineResponse struct {
	Name        string  `json:"name"`
	ContainerID *int64  `json:"container_id"`
	TerminalURL *string `json:"terminal_url"`
}

// newLabAttemptResponse shows an attempt; the checks' output only to admins.
func newLabAttemptResponse(a *lab.Attempt, admin bool) labAttemptResponse {
	r := labAttemptResponse{ID: a.ID, LaboratoryID: a.LabID, UserID: a.UserID, Status: string(a.Status), ContainerID: a.ContainerID,
		TerminalURL: optTerminalURL(a.ContainerID), attemptOutcome: newAttemptOutcome(&a.Attempt), Checks: a.Checks, LastCheckAt: optTime(a.LastCheckAt),
		Checking: a.CheckingSince != nil, SandboxRemovedAt: optTime(a.SandboxRemovedAt), Tasks: make([]taskResultResponse, len(a.Results)),
		Machines: make([]attemptMachineResponse, len(a.Machines))}
	for i, m := range a.Machines {
		r.Machines[i] = attemptMachineResponse{Name: m.Name, ContainerID: m.ContainerID, TerminalURL: optTerminalURL(m.ContainerID)}
	}
	for i, t := range a.Results {
		tr := taskResultResponse{TaskID: t.TaskID, Position: t.Position, Title: t.Title, Passed: t.Passed, Points: t.Points, Feedback: t.Feedback}
		if tr.Feedback == nil {
			tr.Feedback = []string{}
		}
		if admin {
			tr.ExitCode, tr.TimedOut, tr.Output = &t.ExitCode, &t.TimedOut, &t.Output
		}
		r.Tasks[i] = tr
	}
	return r
}

func isAdmin(r *http.Request) bool { return currentUser(r).Role == auth.RoleAdmin }

func (s *Server) handleLabs(w http.ResponseWriter, r *http.Request) error {
	return writeAll(w, r, s.labs.Labs, newLabResponse)
}

func (s *Server) handleLab(w http.ResponseWriter, r *http.Request) error {
	return writeOne(w, r, s.labs.Lab, newLabResponse)
}

func (s *Server) handleSectionLab(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "section_id")
	if err != nil {
		return err
	}
	if _, err := s.lessons.Module(r.Context(), callerOf(r), id); err != nil {
		return err
	}
	l, err := s.labs.LabOfModule(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newLabResponse(l))
	return nil
}

// labAction runs a learner's action on lab {id} and answers with the attempt.
func (s *Server) labAction(status int, act func(*http.Request, int64) (*lab.Attempt, error)) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		call := func(_ context.Context, _ actor.Actor, id int64) (*lab.Attempt, *lab.Lab, error) {
			a, err := act(r, id)
			return a, nil, err
		}
		return serveAttempt(w, r, status, call, s.labAttemptView(r))
	}
}

// labAttemptView shows an attempt as the caller of r may see it, with the
// latest recording of its terminal.
func (s *Server) labAttemptView(r *http.Request) func(*lab.Attempt, *lab.Lab) labAttemptResponse {
	admin := isAdmin(r)
	return func(a *lab.Attempt, _ *lab.Lab) labAttemptResponse {
		out := newLabAttemptResponse(a, admin)
		out.RecordingID = s.attemptRecording(r, recording.KindLab, a.ID)
		return out
	}
}

func (s *Server) handleLabStart(r *http.Request, id int64) (*lab.Attempt, error) {
	return s.labs.Start(r.Context(), callerOf(r), id)
}

func (s *Server) handleLabCheck(r *http.Request, id int64) (*lab.Attempt, error) {
	return s.labs.Check(r.Context(), callerOf(r), id)
}

func (s *Server) handleLabSubmit(r *http.Request, id int64) (*lab.Attempt, error) {
	return s.labs.Submit(r.Context(), callerOf(r), id)
}

func (s *Server) handleLabResults(w http.ResponseWriter, r *http.Request) error {
	return serveAttempt(w, r, http.StatusOK, s.labs.Results, s.labAttemptView(r))
}

// Admin authoring: scalars as query parameters, the rest as a JSON or YAML body.

// labQueryParams are the scalar fields an admin sends in the query string.
var labQueryParams = []string{"slug", "title", "module_id", "template_id", "time_limit_minutes", "passing_score", "published"}

// labBody is what an admin sends as the body.
type labBody struct {
	Description *string          `json:"description" yaml:"description"`
	Setup       *string          `json:"setup" yaml:"setup"`
	Solution    *string          `json:"solution" yaml:"solution"`
	Machines    *[]lab.Machine   `json:"machines" yaml:"machines"`
	Tasks       *[]lab.TaskInput `json:"tasks" yaml:"tasks"`
	Published   *bool            `json:"published" yaml:"published"`
}

func labInput(r *http.Request) (lab.Input, error) {
	q := newQuery(r)
	in := lab.Input{Slug: q.optStr("slug"), Title: q.optStr("title"),
		TimeLimitMinutes: q.optInt("time_limit_minutes", 1, lab.MaxTimeLimit), PassingScore: q.optInt("passing_score", 0, 100)}
	in.ModuleID = q.optID("module_id")
	in.TemplateID = q.optID("template_id")
	in.Published = q.optBool("published")
	if err := q.err(); err != nil {
		return in, err
	}
	var b labBody
	_, err := decodeContentBody(r, &b)
	if err != nil {
		return in, err
	}
	in.Description, in.Setup, in.Solution = b.Description, b.Setup, b.Solution
	if b.Machines != nil {
		in.Machines = b.Machines
		if *in.Machines == nil {
			in.Machines = &[]lab.Machine{}
		}
	}
	if in.Published, err = onePublished(in.Published, b.Published); err != nil {
		return in, err
	}
	if b.Tasks != nil {
		in.Tasks = *b.Tasks
		if in.Tasks == nil {
			in.Tasks = []lab.TaskInput{}
		}
	}
	return in, nil
}

// labAdmin is the admin CRUD of laboratories.
func (s *Server) labAdmin() contentAdmin[*lab.Lab, lab.Input, adminLabResponse] {
	return contentAdmin[*lab.Lab, lab.Input, adminLabResponse]{
		all: s.labs.Mine, one: s.labs.Authored, create: s.labs.Create, update: s.labs.Update, remove: s.labs.Delete,
		input: labInput, respond: newAdminLabResponse, query: labQueryParams, deleted: "Laboratory deleted",
	}
}
