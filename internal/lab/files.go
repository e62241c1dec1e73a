package lab

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"tuxlab/internal/authored"
	"tuxlab/internal/lesson"
	"tuxlab/internal/yamlfile"
)

// FileName is a lab's file inside its module's directory. Labs that belong
// to no module live in the curriculum's labs directory as SLUG.yaml.
const FileName = "lab.yaml"

// LabsDir is where labs of no module live.
const LabsDir = lesson.LabsDir

// File is a lab as its YAML file describes it (docs/labs-and-exams-format.md).
type File struct {
	Slug             string      `yaml:"slug"`
	Title            string      `yaml:"title"`
	Owner            string      `yaml:"owner,omitempty"`     // a username; none: the system's
	Published        *bool       `yaml:"published,omitempty"` // absent: true
	Module           string      `yaml:"module,omitempty"`    // slug; implied by the directory of a module
	Description      string      `yaml:"description"`
	Template         string      `yaml:"template"`
	TimeLimitMinutes int         `yaml:"time_limit_minutes"`
	PassingScore     *int        `yaml:"passing_score,omitempty"`
	Setup            string      `yaml:"setup,omitempty"`
	Solution         string      `yaml:"solution,omitempty"`
	Machines         []Machine   `yaml:"machines,omitempty"`
	Tasks            []TaskInput `yaml:"tasks"`
	Path             string      `yaml:"-"` // where it was read from, for messages
}

// ReadFiles reads every lab of a curriculum directory: DIR/*/lab.yaml, whose
// module is the directory's, and DIR/labs/*.yaml.
func ReadFiles(fsys fs.FS) ([]*File, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var files []*File
	var problems yamlfile.Problems
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		var paths []string
		if e.Name() == LabsDir {
			paths, _ = fs.Glob(fsys, path.Join(LabsDir, "*.yaml"))
		} else if _, err := fs.Stat(fsys, path.Join(e.Name(), FileName)); err == nil {
			paths = []string{path.Join(e.Name(), FileName)}
		}
		for _, p := range paths {
			f, err := readFile(fsys, p)
			if err != nil {
				problems.Add(p, err)
				continue
			}
			if e.Name() != LabsDir {
				slug, err := lesson.ModuleSlugOf(fsys, e.Name())
				if err != nil {
					problems.Addf("%v", err)
					continue
				}
				if f.Module != "" && f.Module != slug {
					problems.Addf("%s: module %q differs from its directory's module %q", p, f.Module, slug)
				}
				f.Module = slug
			}
			files = append(files, f)
		}
	}
	for _, f := range files {
		problems.Slug(f.Path, f.Slug)
	}
	if err := problems.Err("laboratories"); err != nil {
		return nil, err
	}
	return files, nil
}

// readFile reads and validates the lab file p; its errors do not name p.
func readFile(fsys fs.FS, p string) (*File, error) {
	var f File
	if err := yamlfile.Read(fsys, p, &f); err != nil {
		return nil, err
	}
	f.Path = p
	// Validate now, so a bad file is reported with its path before anything is written.
	in := f.Input(1, 1, 0)
	if err := in.apply(&Lab{}); err != nil {
		return nil, err
	}
	if f.Template == "" {
		return nil, errors.New("template: the name of a sandbox template is required")
	}
	return &f, nil
}

// Input is the create or update f describes, with its references as ids.
func (f *File) Input(moduleID, templateID, ownerID int64) Input {
	passing := DefaultPassing
	if f.PassingScore != nil {
		passing = *f.PassingScore
	}
	tasks := f.Tasks
	if tasks == nil {
		tasks = []TaskInput{}
	}
	machines := f.Machines
	if machines == nil {
		machines = []Machine{}
	}
	return Input{Slug: &f.Slug, Title: &f.Title, Description: &f.Description, Setup: &f.Setup, Solution: &f.Solution,
		ModuleID: &moduleID, TemplateID: &templateID, TimeLimitMinutes: &f.TimeLimitMinutes, PassingScore: &passing,
		Machines: &machines, Tasks: tasks, Published: new(f.Published == nil || *f.Published), OwnerID: &ownerID}
}

// OwnerName is the username f names as its owner, or "".
func (f *File) OwnerName() string { return f.Owner }

// ImportReport counts what an import did.
type ImportReport struct{ yamlfile.Counts }

func (r ImportReport) String() string {
	return r.Describe("laboratories")
}

// Import upserts labs (a lab's template is required) by slug; importing the same files twice changes nothing.
func (s *Service) Import(ctx context.Context, files []*File) (ImportReport, error) {
	c, err := authored.Import(ctx, s.kind(), files, true)
	return ImportReport{c}, err
}

// Source says where f is and what it names.
func (f *File) Source() (path, slug, module, template string) {
	return f.Path, f.Slug, f.Module, f.Template
}

// Export writes every lab into dir, a curriculum the lesson export has just
// written: a module's lab beside its module.md, the others in dir/labs.
func (s *Service) Export(ctx context.Context, dir string) (int, error) {
	labs, err := s.store.FindLabs(ctx, Filter{})
	if err != nil {
		return 0, err
	}
	moduleDirs, err := moduleDirectories(dir)
	if err != nil {
		return 0, err
	}
	for _, l := range labs {
		f, err := s.file(ctx, l)
		if err != nil {
			return 0, err
		}
		target := filepath.Join(dir, LabsDir, l.Slug+".yaml")
		if d, ok := moduleDirs[f.Module]; ok {
			target = filepath.Join(dir, d, FileName)
			f.Module = "" // implied by the directory
		}
		if err := yamlfile.Write(target, f); err != nil {
			return 0, err
		}
	}
	return len(labs), nil
}

func (s *Service) file(ctx context.Context, l *Lab) (*File, error) {
	tmpl, err := s.store.TemplateNameByID(ctx, l.TemplateID)
	if err != nil {
		return nil, err
	}
	f := &File{Slug: l.Slug, Title: l.Title, Description: l.Description, Template: tmpl, TimeLimitMinutes: l.TimeLimitMinutes,
		PassingScore: &l.PassingScore, Setup: l.Setup, Solution: l.Solution, Machines: l.Machines, Tasks: make([]TaskInput, len(l.Tasks))}
	if l.ModuleID != nil {
		if f.Module, err = s.store.ModuleSlugByID(ctx, *l.ModuleID); err != nil {
			return nil, err
		}
	}
	if f.Owner, f.Published, err = authored.FileAccess(ctx, s.store, l.Access); err != nil {
		return nil, err
	}
	for i, t := range l.Tasks {
		f.Tasks[i] = TaskInput{Title: t.Title, Description: t.Description, Hint: t.Hint, Points: t.Points, Machine: t.Machine, Check: t.Check}
	}
	return f, nil
}

// moduleDirectories maps module slugs to their directories under dir.
func moduleDirectories(dir string) (map[string]string, error) {
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	fsys := os.DirFS(dir)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if slug, err := lesson.ModuleSlugOf(fsys, e.Name()); err == nil {
			out[slug] = e.Name()
		}
	}
	return out, nil
}
