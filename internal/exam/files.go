package exam

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"tuxlab/internal/authored"
	"tuxlab/internal/lesson"
	"tuxlab/internal/yamlfile"
)

// Dir is the directory of a curriculum that holds exam files, *.yaml.
const Dir = lesson.ExamsDir

// File is an exam as its YAML file describes it (docs/labs-and-exams-format.md).
type File struct {
	Slug             string          `yaml:"slug"`
	Title            string          `yaml:"title"`
	Owner            string          `yaml:"owner,omitempty"`     // a username; none: the system's
	Published        *bool           `yaml:"published,omitempty"` // absent: true
	Description      string          `yaml:"description"`
	Module           string          `yaml:"module,omitempty"`
	TimeLimitMinutes int             `yaml:"time_limit_minutes"`
	PassingScore     *int            `yaml:"passing_score,omitempty"`
	MaxAttempts      int             `yaml:"max_attempts,omitempty"`
	Template         string          `yaml:"template,omitempty"`
	Questions        []QuestionInput `yaml:"questions"`
	Path             string          `yaml:"-"`
}

// ReadFiles reads DIR/exams/*.yaml; a curriculum without exams has none.
func ReadFiles(fsys fs.FS) ([]*File, error) {
	paths, err := fs.Glob(fsys, path.Join(Dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var files []*File
	var problems yamlfile.Problems
	for _, p := range paths {
		f := &File{Path: p}
		if err := yamlfile.Read(fsys, p, f); err != nil {
			problems.Add(p, err)
			continue
		}
		var tmpl int64
		if f.Template != "" {
			tmpl = 1 // resolved at import; validation only needs to know there is one
		}
		in := f.Input(0, tmpl, 0)
		if err := in.apply(&Exam{}); err != nil {
			problems.Add(p, err)
			continue
		}
		problems.Slug(p, f.Slug)
		files = append(files, f)
	}
	if err := problems.Err("exams"); err != nil {
		return nil, err
	}
	return files, nil
}

// Input is the create or update f describes, with its references as ids.
func (f *File) Input(moduleID, templateID, ownerID int64) Input {
	passing := DefaultPassing
	if f.PassingScore != nil {
		passing = *f.PassingScore
	}
	qs := f.Questions
	if qs == nil {
		qs = []QuestionInput{}
	}
	return Input{Slug: &f.Slug, Title: &f.Title, Description: &f.Description, ModuleID: &moduleID, TemplateID: &templateID,
		TimeLimitMinutes: &f.TimeLimitMinutes, PassingScore: &passing, MaxAttempts: &f.MaxAttempts, Questions: qs,
		Published: new(f.Published == nil || *f.Published), OwnerID: &ownerID}
}

// OwnerName is the username f names as its owner, or "".
func (f *File) OwnerName() string { return f.Owner }

// ImportReport counts what an import did.
type ImportReport struct{ yamlfile.Counts }

func (r ImportReport) String() string {
	return r.Describe("exams")
}

// Import upserts exams by slug; importing the same files twice changes nothing.
func (s *Service) Import(ctx context.Context, files []*File) (ImportReport, error) {
	c, err := authored.Import(ctx, s.kind(), files, false)
	return ImportReport{c}, err
}

// Source says where f is and what it names.
func (f *File) Source() (path, slug, module, template string) {
	return f.Path, f.Slug, f.Module, f.Template
}

// Export writes every exam to dir/exams/NN-slug.yaml.
func (s *Service) Export(ctx context.Context, dir string) (int, error) {
	exams, err := s.store.FindExams(ctx)
	if err != nil {
		return 0, err
	}
	for i, e := range exams {
		f := &File{Slug: e.Slug, Title: e.Title, Description: e.Description, TimeLimitMinutes: e.TimeLimitMinutes,
			PassingScore: &e.PassingScore, MaxAttempts: e.MaxAttempts, Questions: make([]QuestionInput, len(e.Questions))}
		if e.ModuleID != nil {
			if f.Module, err = s.store.ModuleSlugByID(ctx, *e.ModuleID); err != nil {
				return 0, err
			}
		}
		if f.Owner, f.Published, err = authored.FileAccess(ctx, s.store, e.Access); err != nil {
			return 0, err
		}
		if e.TemplateID != nil {
			if f.Template, err = s.store.TemplateNameByID(ctx, *e.TemplateID); err != nil {
				return 0, err
			}
		}
		for j, q := range e.Questions {
			f.Questions[j] = QuestionInput{Kind: q.Kind, Prompt: q.Prompt, Options: q.Options, Answer: q.Key.Answer, Answers: q.Key.Answers,
				Accept: q.Key.Accept, CaseSensitive: q.Key.CaseSensitive, Check: q.Key.Check, Solution: q.Key.Solution,
				Points: q.Points, Explanation: q.Explanation}
		}
		if err := yamlfile.Write(filepath.Join(dir, Dir, fmt.Sprintf("%02d-%s.yaml", i+1, e.Slug)), f); err != nil {
			return 0, err
		}
	}
	return len(exams), nil
}
