package exam

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/authored"
	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
	"tuxlab/internal/sandbox"
)

// Limits of an exam's fields.
const (
	MaxQuestions     = 100
	MaxOptions       = 20
	MaxAccept        = 20
	MaxPromptLen     = 5000
	MaxTextLen       = authored.MaxTextLen
	MaxPoints        = 100
	MaxTimeLimit     = authored.MaxTimeLimit
	MaxAttemptsLimit = 100
	DefaultTimeLimit = 30
	DefaultPassing   = 70
)

// Input holds an exam's fields from an admin or a file. Nil fields keep
// their value (on create: take the default). Validation errors name the
// field: ["title"], ["questions", 3, "answer"].
type Input struct {
	Slug, Title, Description                    *string
	ModuleID, TemplateID                        *int64 // 0 clears
	TimeLimitMinutes, PassingScore, MaxAttempts *int
	Questions                                   []QuestionInput // nil: unchanged
	Published                                   *bool
	OwnerID                                     *int64 // 0: the system; set by imports only, an author's create owns what it makes
}

// QuestionInput is one question as an admin or a file gives it.
type QuestionInput struct {
	Kind          Kind     `json:"kind" yaml:"kind"`
	Prompt        string   `json:"prompt" yaml:"prompt"`
	Options       []string `json:"options,omitempty" yaml:"options,omitempty"`
	Answer        *int     `json:"answer,omitempty" yaml:"answer,omitempty"`
	Answers       []int    `json:"answers,omitempty" yaml:"answers,omitempty"`
	Accept        []string `json:"accept,omitempty" yaml:"accept,omitempty"`
	CaseSensitive bool     `json:"case_sensitive,omitempty" yaml:"case_sensitive,omitempty"`
	Check         string   `json:"check,omitempty" yaml:"check,omitempty"`
	Solution      string   `json:"solution,omitempty" yaml:"solution,omitempty"`
	Points        int      `json:"points,omitempty" yaml:"points,omitempty"`
	Explanation   string   `json:"explanation,omitempty" yaml:"explanation,omitempty"`
}

func (in *Input) apply(e *Exam) error {
	var f errs.Fields
	authored.Set(&e.Slug, in.Slug)
	authored.Set(&e.Title, in.Title)
	authored.Set(&e.Description, in.Description)
	authored.SetRef(&e.ModuleID, in.ModuleID)
	authored.SetRef(&e.TemplateID, in.TemplateID)
	authored.Set(&e.TimeLimitMinutes, in.TimeLimitMinutes)
	authored.Set(&e.PassingScore, in.PassingScore)
	authored.Set(&e.MaxAttempts, in.MaxAttempts)
	authored.Set(&e.Published, in.Published)
	authored.SetRef(&e.OwnerID, in.OwnerID)
	authored.CheckNames(&f, e.Slug, e.Title, e.Description)
	authored.CheckLimits(&f, e.TimeLimitMinutes, e.PassingScore)
	if e.MaxAttempts < 0 || e.MaxAttempts > MaxAttemptsLimit {
		f.Add([]any{"max_attempts"}, "Input should be between 0 (no limit) and 100", "range")
	}
	if in.Questions != nil {
		e.Questions = mergeQuestions(e.Questions, in.Questions)
	}
	authored.CheckCount(&f, "questions", len(e.Questions), MaxQuestions,
		"An exam needs at least one question", "An exam has at most 100 questions")
	for i, q := range e.Questions {
		if i >= MaxQuestions {
			break
		}
		q.validate(&f, []any{"questions", i})
	}
	if e.HasPractical() && e.TemplateID == nil {
		f.Add([]any{"template_id"}, "An exam with practical questions needs the sandbox template they are checked in", "missing")
	}
	return f.Err()
}

func mergeQuestions(old []*Question, in []QuestionInput) []*Question {
	out := make([]*Question, len(in))
	for i, qi := range in {
		q := &Question{Position: i, Kind: qi.Kind, Prompt: qi.Prompt, Options: qi.Options, Points: qi.Points, Explanation: qi.Explanation,
			Key: Key{Answer: qi.Answer, Answers: qi.Answers, Accept: qi.Accept, CaseSensitive: qi.CaseSensitive, Check: qi.Check, Solution: qi.Solution}}
		if q.Points == 0 {
			q.Points = 1
		}
		if q.Options == nil {
			q.Options = []string{}
		}
		if i < len(old) {
			q.ID = old[i].ID
		}
		out[i] = q
	}
	return out
}

// validate checks one question, and that its kind has exactly the key it needs.
func (q *Question) validate(f *errs.Fields, loc []any) {
	at := func(field string) []any { return append(slices.Clone(loc), field) }
	if !slices.Contains(Kinds, q.Kind) {
		f.Add(at("kind"), "Kind must be one of single_choice, multiple_choice, short_text, practical", "enum")
		return
	}
	if strings.TrimSpace(q.Prompt) == "" || utf8.RuneCountInString(q.Prompt) > MaxPromptLen {
		f.Add(at("prompt"), "A prompt is 1 to 5000 characters", "string_too_long")
	}
	if utf8.RuneCountInString(q.Explanation) > MaxPromptLen {
		f.Add(at("explanation"), "An explanation is at most 5000 characters", "string_too_long")
	}
	if q.Points < 1 || q.Points > MaxPoints {
		f.Add(at("points"), "Input should be between 1 and 100", "range")
	}
	choice := q.Kind == SingleChoice || q.Kind == MultipleChoice
	k := q.Key
	unexpected := func(field string, present bool) {
		if present {
			f.Add(at(field), fmt.Sprintf("A %s question takes no %s", q.Kind, field), "extra_forbidden")
		}
	}
	unexpected("options", !choice && len(q.Options) > 0)
	unexpected("answer", q.Kind != SingleChoice && k.Answer != nil)
	unexpected("answers", q.Kind != MultipleChoice && len(k.Answers) > 0)
	unexpected("accept", q.Kind != ShortText && len(k.Accept) > 0)
	unexpected("check", q.Kind != Practical && k.Check != "")
	unexpected("solution", q.Kind != Practical && k.Solution != "")
	if choice {
		if len(q.Options) < 2 || len(q.Options) > MaxOptions {
			f.Add(at("options"), "A choice question has 2 to 20 options", "value_error")
		}
		for _, o := range q.Options {
			if strings.TrimSpace(o) == "" || strings.ContainsAny(o, "\r\n") || utf8.RuneCountInString(o) > 500 {
				f.Add(at("options"), "Each option is one non-empty line of at most 500 characters", "value_error")
				break
			}
		}
	}
	inRange := func(i int) bool { return i >= 0 && i < len(q.Options) }
	switch q.Kind {
	case SingleChoice:
		if k.Answer == nil || !inRange(*k.Answer) {
			f.Add(at("answer"), "The index of the right option, from 0, is required", "value_error")
		}
	case MultipleChoice:
		sorted := slices.Clone(k.Answers)
		slices.Sort(sorted)
		if len(k.Answers) == 0 || len(slices.Compact(sorted)) != len(k.Answers) || !all(k.Answers, inRange) {
			f.Add(at("answers"), "The indexes of every right option, from 0, each once, are required", "value_error")
		}
	case ShortText:
		if len(k.Accept) == 0 || len(k.Accept) > MaxAccept {
			f.Add(at("accept"), "1 to 20 accepted answers are required", "value_error")
		}
		for _, a := range k.Accept {
			if strings.TrimSpace(a) == "" || utf8.RuneCountInString(a) > MaxTextAnswer {
				f.Add(at("accept"), "An accepted answer is 1 to 1000 characters", "value_error")
				break
			}
			// Results show explanations to learners who may have attempts left:
			// an explanation teaches why, it never gives the text to type.
			if q.Explanation != "" && strings.Contains(strings.ToLower(q.Explanation), strings.ToLower(strings.TrimSpace(a))) {
				f.Add(at("explanation"), "An explanation must not contain an accepted answer", "value_error")
				break
			}
		}
	case Practical:
		switch {
		case k.Check == "":
			f.Add(at("check"), "Field required: the check script", "missing")
		case len(k.Check) > sandbox.MaxScriptBytes || len(k.Solution) > sandbox.MaxScriptBytes:
			f.Add(at("check"), "A script must be at most 64 KiB", "string_too_long")
		case sandbox.CheckInterpreter(k.Check) != nil:
			f.Add(at("check"), sandbox.CheckInterpreter(k.Check).Error(), "value_error")
		case k.Solution != "" && sandbox.CheckInterpreter(k.Solution) != nil:
			f.Add(at("solution"), sandbox.CheckInterpreter(k.Solution).Error(), "value_error")
		}
	}
}

func all(xs []int, ok func(int) bool) bool {
	for _, x := range xs {
		if !ok(x) {
			return false
		}
	}
	return true
}

// kind is how exams are authored: the shared create, update, delete and
// import over this service's store.
func (s *Service) kind() authored.Kind[*Exam, Input] {
	return authored.Kind[*Exam, Input]{
		Names: s.store, Now: s.now,
		New:   func() *Exam { return &Exam{TimeLimitMinutes: DefaultTimeLimit, PassingScore: DefaultPassing} },
		Apply: func(in Input, e *Exam) error { return in.apply(e) },
		Copy: func(e *Exam) *Exam {
			c := *e
			c.Questions = append([]*Question(nil), e.Questions...)
			return &c
		},
		ID:       func(e *Exam) int64 { return e.ID },
		Refs:     func(e *Exam) authored.Refs { return authored.Refs{ModuleID: e.ModuleID, TemplateID: e.TemplateID} },
		Stamps:   func(e *Exam) authored.Stamps { return authored.Stamps{Created: &e.CreatedAt, Updated: &e.UpdatedAt} },
		Access:   func(e *Exam) *lesson.Access { return &e.Access },
		FindByID: s.store.FindExamByID, FindBySlug: s.store.FindExamBySlug, NotFound: ErrExamNotFound,
		Insert: s.store.CreateExam, Save: s.store.UpdateExam, Remove: s.store.DeleteExam,
	}
}

// Mine lists the exams a may change, drafts included: the authoring view.
func (s *Service) Mine(ctx context.Context, a actor.Actor) ([]*Exam, error) {
	all, err := s.store.FindExams(ctx)
	if err != nil {
		return nil, err
	}
	return s.kind().Mine(a, all)
}

// Authored returns exam id for its authoring view, when a may change it.
func (s *Service) Authored(ctx context.Context, a actor.Actor, id int64) (*Exam, error) {
	return s.kind().Get(ctx, a, id)
}

// Create adds an exam from an author's input, owned by a.
func (s *Service) Create(ctx context.Context, a actor.Actor, in Input) (*Exam, error) {
	return s.kind().Create(ctx, a, in)
}

// Update changes the fields given of exam id.
func (s *Service) Update(ctx context.Context, a actor.Actor, id int64, in Input) (*Exam, error) {
	return s.kind().Update(ctx, a, id, in)
}

// Delete removes an exam; with learners' attempts it needs cascade.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	return s.kind().Delete(ctx, a, id, cascade)
}
