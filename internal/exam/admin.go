package exam

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"tuxlab/internal/actor"
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
	MaxTextLen       = 20000
	MaxPoints        = 100
	MaxTimeLimit     = 600
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
	for dst, v := range map[*string]*string{&e.Slug: in.Slug, &e.Title: in.Title, &e.Description: in.Description} {
		if v != nil {
			*dst = *v
		}
	}
	for dst, v := range map[**int64]*int64{&e.ModuleID: in.ModuleID, &e.TemplateID: in.TemplateID} {
		if v != nil {
			*dst = v
			if *v == 0 {
				*dst = nil
			}
		}
	}
	for dst, v := range map[*int]*int{&e.TimeLimitMinutes: in.TimeLimitMinutes, &e.PassingScore: in.PassingScore, &e.MaxAttempts: in.MaxAttempts} {
		if v != nil {
			*dst = *v
		}
	}
	lesson.CheckSlug(&f, []any{"slug"}, e.Slug)
	lesson.CheckTitle(&f, []any{"title"}, e.Title)
	if utf8.RuneCountInString(e.Description) > MaxTextLen {
		f.Add([]any{"description"}, "Text is too long", "string_too_long")
	}
	if e.TimeLimitMinutes < 1 || e.TimeLimitMinutes > MaxTimeLimit {
		f.Add([]any{"time_limit_minutes"}, "Input should be between 1 and 600", "range")
	}
	if e.PassingScore < 0 || e.PassingScore > 100 {
		f.Add([]any{"passing_score"}, "Input should be between 0 and 100", "range")
	}
	if e.MaxAttempts < 0 || e.MaxAttempts > MaxAttemptsLimit {
		f.Add([]any{"max_attempts"}, "Input should be between 0 (no limit) and 100", "range")
	}
	if in.Questions != nil {
		e.Questions = mergeQuestions(e.Questions, in.Questions)
	}
	switch {
	case len(e.Questions) == 0:
		f.Add([]any{"questions"}, "An exam needs at least one question", "too_short")
	case len(e.Questions) > MaxQuestions:
		f.Add([]any{"questions"}, "An exam has at most 100 questions", "too_long")
	}
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

// checkReferences refuses a module or template that does not exist, naming the field.
func (s *Service) checkReferences(ctx context.Context, e *Exam) error {
	var f errs.Fields
	if e.ModuleID != nil {
		if _, err := s.store.ModuleSlugByID(ctx, *e.ModuleID); errs.Is(err, errs.NotFound) {
			f.Add([]any{"module_id"}, "No module with this id", "value_error")
		} else if err != nil {
			return err
		}
	}
	if e.TemplateID != nil {
		if _, err := s.store.TemplateNameByID(ctx, *e.TemplateID); errs.Is(err, errs.NotFound) {
			f.Add([]any{"template_id"}, "No sandbox template with this id", "value_error")
		} else if err != nil {
			return err
		}
	}
	return f.Err()
}

// Create adds an exam from an admin's input.
func (s *Service) Create(ctx context.Context, a actor.Actor, in Input) (*Exam, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	now := s.now()
	e := &Exam{TimeLimitMinutes: DefaultTimeLimit, PassingScore: DefaultPassing, CreatedAt: now, UpdatedAt: now}
	if err := in.apply(e); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, e); err != nil {
		return nil, err
	}
	if err := s.store.CreateExam(ctx, e); err != nil {
		return nil, err
	}
	return s.store.FindExamByID(ctx, e.ID)
}

// Update changes the fields given of exam id.
func (s *Service) Update(ctx context.Context, a actor.Actor, id int64, in Input) (*Exam, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	e, err := s.store.FindExamByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := in.apply(e); err != nil {
		return nil, err
	}
	if err := s.checkReferences(ctx, e); err != nil {
		return nil, err
	}
	e.UpdatedAt = s.now()
	if err := s.store.UpdateExam(ctx, e); err != nil {
		return nil, err
	}
	return s.store.FindExamByID(ctx, id)
}

// Delete removes an exam; with learners' attempts it needs cascade.
func (s *Service) Delete(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	return s.store.DeleteExam(ctx, id, cascade)
}
