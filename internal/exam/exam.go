// Package exam provides exams: timed sets of questions of four kinds
// (single choice, multiple choice, short text, and practical tasks checked
// by a script in a sandbox made fresh for each attempt), attempts limited in
// number, graded once at submission. Each attempt shows the options of its
// choice questions in an order of its own. Answers, accepted texts, scripts
// and solutions are for admins only; after submitting, a learner sees per
// question whether it was right and its explanation.
package exam

import (
	"context"
	"time"

	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

// Kind is a kind of question.
type Kind string

// The kinds of question.
const (
	SingleChoice   Kind = "single_choice"
	MultipleChoice Kind = "multiple_choice"
	ShortText      Kind = "short_text"
	Practical      Kind = "practical"
)

// Kinds lists every kind, for validation and documentation.
var Kinds = []Kind{SingleChoice, MultipleChoice, ShortText, Practical}

// Exam is an exam.
type Exam struct {
	ID               int64
	Slug             string
	ModuleID         *int64
	TemplateID       *int64 // the sandbox template practical questions are checked in
	Title            string
	Description      string // Markdown
	TimeLimitMinutes int
	PassingScore     int // percent of points
	MaxAttempts      int // 0: unlimited
	Questions        []*Question
	lesson.Access
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxPoints is the sum of the questions' points.
func (e *Exam) MaxPoints() int {
	n := 0
	for _, q := range e.Questions {
		n += q.Points
	}
	return n
}

// HasPractical reports whether a question needs the learner's sandbox.
func (e *Exam) HasPractical() bool {
	for _, q := range e.Questions {
		if q.Kind == Practical {
			return true
		}
	}
	return false
}

// Question is one question. Key holds what learners must never see.
type Question struct {
	ID          int64
	Position    int
	Kind        Kind
	Prompt      string   // Markdown
	Options     []string // choice kinds
	Points      int
	Explanation string // shown in results, after submission
	Key         Key
}

// Key is the secret part of a question.
type Key struct {
	Answer        *int     `json:"answer,omitempty"`  // single_choice: the right option, from 0
	Answers       []int    `json:"answers,omitempty"` // multiple_choice: every right option
	Accept        []string `json:"accept,omitempty"`  // short_text: accepted answers
	CaseSensitive bool     `json:"case_sensitive,omitempty"`
	Check         string   `json:"check,omitempty"`    // practical: exit 0 means passed
	Solution      string   `json:"solution,omitempty"` // practical: solves it, as the learner
}

// Answer is a learner's answer to one question.
type Answer struct {
	QuestionID int64   `json:"question_id"`
	Choice     *int    `json:"choice,omitempty"`
	Choices    []int   `json:"choices,omitempty"`
	Text       *string `json:"text,omitempty"`
}

// Attempt is one learner's go at an exam.
type Attempt struct {
	attempt.Attempt
	ExamID int64
	// Order is the order this attempt shows each choice question's options
	// in, drawn at its start: Order[question id][shown index] is the
	// option's authored index. A question without an order (an attempt made
	// before orders were drawn) shows its options as authored.
	Order map[int64][]int
	// ContainerID is the sandbox made for this attempt, where its practical
	// questions are graded; nil when the attempt has none (no practical
	// question, or an attempt older than fresh sandboxes).
	ContainerID *int64
	Answers     []Answer // as the learner gave them: indexes in the shown order
	Results     []QuestionResult
	// Draft is the answers saved while the attempt is in progress (see
	// SaveDraft), in the submit's shape; DraftSavedAt when, nil before the
	// first save.
	Draft        []Answer
	DraftSavedAt *time.Time
}

// OrderOf returns the order this attempt shows q's options in: its stored
// order when that is a permutation of q's options, else the authored order
// (an attempt made before orders were drawn, or a question whose options an
// admin has since changed in number).
func (a *Attempt) OrderOf(q *Question) []int {
	if p, ok := a.Order[q.ID]; ok && isPermutation(p, len(q.Options)) {
		return p
	}
	id := make([]int, len(q.Options))
	for i := range id {
		id[i] = i
	}
	return id
}

// Shown returns q as this attempt shows it: its options in the attempt's
// order. The key is left out: what a learner's view is built from carries no
// answer.
func (a *Attempt) Shown(q *Question) *Question {
	out := &Question{ID: q.ID, Position: q.Position, Kind: q.Kind, Prompt: q.Prompt, Points: q.Points, Explanation: q.Explanation,
		Options: make([]string, len(q.Options))}
	for shown, authored := range a.OrderOf(q) {
		out.Options[shown] = q.Options[authored]
	}
	return out
}

// authored translates an answer given in the shown order into the authored
// order its question's key uses.
func (a *Attempt) authored(q *Question, an Answer) Answer {
	order := a.OrderOf(q)
	at := func(shown int) int {
		if shown >= 0 && shown < len(order) {
			return order[shown]
		}
		return shown // out of range: validation refuses it before grading
	}
	out := Answer{QuestionID: an.QuestionID, Text: an.Text}
	if an.Choice != nil {
		c := at(*an.Choice)
		out.Choice = &c
	}
	if an.Choices != nil {
		out.Choices = make([]int, len(an.Choices))
		for i, c := range an.Choices {
			out.Choices[i] = at(c)
		}
	}
	return out
}

// drawOrder draws a random order for each choice question of e; perm returns
// a random permutation of [0, n).
func drawOrder(e *Exam, perm func(n int) []int) map[int64][]int {
	order := map[int64][]int{}
	for _, q := range e.Questions {
		if q.Kind == SingleChoice || q.Kind == MultipleChoice {
			order[q.ID] = perm(len(q.Options))
		}
	}
	return order
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, i := range p {
		if i < 0 || i >= n || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}

// QuestionResult is how one question was graded.
type QuestionResult struct {
	QuestionID int64    `json:"question_id"`
	Position   int      `json:"position"`
	Kind       Kind     `json:"kind"`
	Correct    bool     `json:"correct"`
	Points     int      `json:"points"`     // earned
	MaxPoints  int      `json:"max_points"` // the question's
	Feedback   []string `json:"feedback"`   // a practical check's FAIL: lines
	// For admins only: a practical check's output.
	Output string `json:"output,omitempty"`
}

// Errors of the exam domain.
var (
	ErrExamNotFound    = errs.E(errs.NotFound, "Exam not found")
	ErrAttemptNotFound = errs.E(errs.NotFound, "Attempt not found")
	ErrSlugTaken       = errs.E(errs.Conflict, "An exam with this slug exists")
	ErrNoAttemptsLeft  = errs.E(errs.Conflict, "No attempts left: every attempt this exam allows is used")
	ErrNoOpenAttempt   = errs.E(errs.Conflict, "No attempt of this exam is in progress: start it first")
	ErrHasAttempts     = errs.E(errs.Conflict, "Learners have attempts of this exam: delete with cascade=true to remove them too")
	ErrNotFinished     = errs.E(errs.Conflict, "This attempt is still in progress: submit it to see its results")
)

// Store keeps exams and attempts. Missing rows are ErrExamNotFound or
// ErrAttemptNotFound.
type Store interface {
	FindExams(ctx context.Context) ([]*Exam, error)
	FindExamByID(ctx context.Context, id int64) (*Exam, error)
	FindExamBySlug(ctx context.Context, slug string) (*Exam, error)
	CreateExam(ctx context.Context, e *Exam) error
	// UpdateExam stores e; questions are matched by position, so their ids
	// stay while the exam keeps as many.
	UpdateExam(ctx context.Context, e *Exam) error
	DeleteExam(ctx context.Context, id int64, cascade bool) error

	// CreateAttempt inserts a unless the user has used maxAttempts (0: no
	// limit; ErrNoAttemptsLeft) or has an open attempt (attempt.ErrOpen).
	CreateAttempt(ctx context.Context, a *Attempt, maxAttempts int) error
	FindAttemptByID(ctx context.Context, id int64) (*Attempt, error)
	FindOpenAttempt(ctx context.Context, examID, userID int64) (*Attempt, error)
	UpdateAttempt(ctx context.Context, id int64, change func(a *Attempt) error) (*Attempt, error)
	CountAttempts(ctx context.Context, examID, userID int64) (int, error)
	// FindUserAttempts returns every attempt of the user, of any exam, oldest first.
	FindUserAttempts(ctx context.Context, userID int64) ([]*Attempt, error)
	// SaveDraft stores answers as the draft of attempt id at now, once allow
	// accepts the attempt as it is with its row locked; allow's error is
	// returned as is.
	SaveDraft(ctx context.Context, id int64, answers []Answer, now time.Time, allow func(*Attempt) error) (*Attempt, error)
	// FindEndedAttemptSandboxes returns the sandboxes, still there, of the
	// user's exam attempts (of any exam) that are over: submitted, expired,
	// or in progress past their deadline at now.
	FindEndedAttemptSandboxes(ctx context.Context, userID int64, now time.Time) ([]int64, error)

	ModuleIDBySlug(ctx context.Context, slug string) (int64, error)
	ModuleSlugByID(ctx context.Context, id int64) (string, error)
	// ModuleOwnerByID returns the owner of module id (nil: the system).
	ModuleOwnerByID(ctx context.Context, id int64) (*int64, error)
	// UserIDByName and UserNameByID resolve the owners files name.
	UserIDByName(ctx context.Context, username string) (int64, error)
	UserNameByID(ctx context.Context, id int64) (string, error)
	TemplateIDByName(ctx context.Context, name string) (int64, error)
	TemplateNameByID(ctx context.Context, id int64) (string, error)
}
