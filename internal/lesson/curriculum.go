package lesson

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"tuxlab/internal/errs"
)

// Curriculum is a set of modules and themes as files describe them. Slugs are
// the keys that tie files to rows, so an import can run again and again.
type Curriculum struct {
	Modules []*ModuleFile
}

// ModuleFile is a module directory: module.md and its theme files.
type ModuleFile struct {
	Slug        string
	Title       string
	Order       int
	Description string
	Owner       string // a username; "": the system's
	Published   bool
	Themes      []*ThemeFile
	Path        string // where it was read from, for error messages
}

// ThemeFile is one theme file.
type ThemeFile struct {
	Slug             string
	Title            string
	Order            int
	EstimatedMinutes int
	Markdown         string
	HTML             string // rendered by the service before the store sees it
	Owner            string // a username; "": the system's
	Published        bool
	Path             string
}

// ImportReport counts what an import did.
type ImportReport struct {
	ModulesCreated, ModulesUpdated, ModulesUnchanged int
	ThemesCreated, ThemesUpdated, ThemesUnchanged    int
}

func (r ImportReport) String() string {
	return fmt.Sprintf("modules: %d created, %d updated, %d unchanged; themes: %d created, %d updated, %d unchanged",
		r.ModulesCreated, r.ModulesUpdated, r.ModulesUnchanged, r.ThemesCreated, r.ThemesUpdated, r.ThemesUnchanged)
}

// The file layout: DIR/NN-module-slug/module.md and DIR/NN-module-slug/NN-theme.md.
const moduleFileName = "module.md"

// ExamsDir and LabsDir are directories of a curriculum that hold exams and
// laboratories of no module, not modules.
const (
	ExamsDir = "exams"
	LabsDir  = "labs"
)

// ModuleSlugOf reads the slug of the module in directory dir of fsys.
func ModuleSlugOf(fsys fs.FS, dir string) (string, error) {
	p := path.Join(dir, moduleFileName)
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return "", fmt.Errorf("%s: missing %s", dir, moduleFileName)
	}
	kv, _, err := parseFrontMatter(p, string(b), "slug", "title", "order")
	if err != nil {
		return "", err
	}
	return kv["slug"], nil
}

var frontMatterKey = regexp.MustCompile(`^([a-z_]+):\s*(.*)$`)

// optionalKeys may appear in any front matter; every other allowed key must.
var optionalKeys = []string{"owner", "published"}

// parseFrontMatter splits a file into its front matter (flat key: value lines
// between --- lines) and body. It checks that exactly the allowed keys
// appear, and optionalKeys at most once each.
func parseFrontMatter(name, text string, required ...string) (map[string]string, string, error) {
	allowed := append(required[:len(required):len(required)], optionalKeys...)
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if lines[0] != "---" {
		return nil, "", fmt.Errorf("%s: must start with a --- front matter line", name)
	}
	closing := -1
	for i := 1; i < len(lines); i++ {
		if lines[i] == "---" {
			closing = i
			break
		}
	}
	if closing < 0 {
		return nil, "", fmt.Errorf("%s: front matter is not closed by a --- line", name)
	}
	head := strings.Join(lines[1:closing], "\n")
	body := strings.Join(lines[closing+1:], "\n")
	kv := map[string]string{}
	for n, raw := range strings.Split(head, "\n") {
		line := n + 2 // the file's line number: the opening --- is line 1
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		m := frontMatterKey.FindStringSubmatch(l)
		if m == nil {
			return nil, "", fmt.Errorf("%s:%d: front matter lines are key: value, got %q", name, line, l)
		}
		if !contains(allowed, m[1]) {
			return nil, "", fmt.Errorf("%s:%d: unknown front matter key %q (allowed: %s)", name, line, m[1], strings.Join(allowed, ", "))
		}
		if _, dup := kv[m[1]]; dup {
			return nil, "", fmt.Errorf("%s:%d: key %q given twice", name, line, m[1])
		}
		kv[m[1]] = strings.TrimSpace(m[2])
	}
	for _, k := range required {
		if _, ok := kv[k]; !ok {
			return nil, "", fmt.Errorf("%s: front matter lacks %q", name, k)
		}
	}
	return kv, strings.TrimLeft(body, "\n"), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ReadCurriculum reads and validates a curriculum from fsys: every module
// directory at its root with a module.md and theme files.
func ReadCurriculum(fsys fs.FS) (*Curriculum, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	c := &Curriculum{}
	var problems []string
	slugs := map[string]string{}
	seen := func(slug, where string) {
		if prev, ok := slugs[slug]; ok {
			problems = append(problems, fmt.Sprintf("%s: slug %q already used by %s", where, slug, prev))
		}
		slugs[slug] = where
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || e.Name() == ExamsDir || e.Name() == LabsDir {
			continue
		}
		m, themeProblems := readModule(fsys, e.Name())
		problems = append(problems, themeProblems...)
		if m == nil {
			continue
		}
		seen(m.Slug, m.Path)
		for _, t := range m.Themes {
			seen(t.Slug, t.Path)
		}
		c.Modules = append(c.Modules, m)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("curriculum has %d problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	if len(c.Modules) == 0 {
		return nil, fmt.Errorf("no module directories found (each needs a %s)", moduleFileName)
	}
	sort.SliceStable(c.Modules, func(i, j int) bool { return c.Modules[i].Order < c.Modules[j].Order })
	return c, nil
}

func readModule(fsys fs.FS, dir string) (*ModuleFile, []string) {
	p := path.Join(dir, moduleFileName)
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: missing %s", dir, moduleFileName)}
	}
	kv, body, err := parseFrontMatter(p, string(b), "slug", "title", "order")
	if err != nil {
		return nil, []string{err.Error()}
	}
	m := &ModuleFile{Slug: kv["slug"], Title: kv["title"], Description: strings.TrimSpace(body), Path: p}
	var problems []string
	var f errs.Fields
	m.Owner, m.Published = accessFields(&f, p, kv)
	checkSlug(&f, []any{p, "slug"}, m.Slug)
	checkText(&f, []any{p, "title"}, "Title", m.Title, MaxTitleLen)
	m.Order = intField(&f, p, "order", kv["order"], 0, MaxOrderIndex)
	if len(m.Description) > MaxDescriptionLen {
		f.Add([]any{p}, "Description must be at most 2000 characters", "string_too_long")
	}
	problems = append(problems, fieldProblems(f)...)

	entries, _ := fs.ReadDir(fsys, dir)
	for _, e := range entries {
		if e.IsDir() || e.Name() == moduleFileName || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		t, err := readTheme(fsys, path.Join(dir, e.Name()))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		m.Themes = append(m.Themes, t)
	}
	sort.SliceStable(m.Themes, func(i, j int) bool { return m.Themes[i].Order < m.Themes[j].Order })
	return m, problems
}

func readTheme(fsys fs.FS, p string) (*ThemeFile, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMarkdownBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, MaxMarkdownBytes)
	}
	kv, body, err := parseFrontMatter(p, string(b), "slug", "title", "order", "estimated_minutes")
	if err != nil {
		return nil, err
	}
	t := &ThemeFile{Slug: kv["slug"], Title: kv["title"], Markdown: body, Path: p}
	var f errs.Fields
	t.Owner, t.Published = accessFields(&f, p, kv)
	checkSlug(&f, []any{p, "slug"}, t.Slug)
	checkText(&f, []any{p, "title"}, "Title", t.Title, MaxTitleLen)
	t.Order = intField(&f, p, "order", kv["order"], 0, MaxOrderIndex)
	t.EstimatedMinutes = intField(&f, p, "estimated_minutes", kv["estimated_minutes"], 1, MaxMinutes)
	if problems := fieldProblems(f); len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n  "))
	}
	return t, nil
}

// accessFields reads the optional owner (a username) and published (true
// or false, absent: true) of a front matter.
func accessFields(f *errs.Fields, p string, kv map[string]string) (string, bool) {
	published := true
	if v, ok := kv["published"]; ok {
		switch v {
		case "true":
		case "false":
			published = false
		default:
			f.Add([]any{p, "published"}, "published must be true or false", "bool_parsing")
		}
	}
	return kv["owner"], published
}

// accessLines writes the owner and published lines of a front matter:
// nothing for the system's published content.
func accessLines(owner string, published bool) string {
	var b strings.Builder
	if owner != "" {
		b.WriteString("owner: " + owner + "\n")
	}
	if !published {
		b.WriteString("published: false\n")
	}
	return b.String()
}

func intField(f *errs.Fields, p, key, v string, lo, hi int) int {
	n, err := strconv.Atoi(v)
	if err != nil {
		f.Add([]any{p, key}, key+" must be an integer", "int_parsing")
		return 0
	}
	checkRange(f, []any{p, key}, key, n, lo, hi)
	return n
}

func fieldProblems(f errs.Fields) []string {
	var out []string
	for _, e := range f {
		out = append(out, fmt.Sprintf("%v: %s", e.Loc[0], e.Msg))
	}
	return out
}

// WriteCurriculum writes modules to dir in the file layout ReadCurriculum reads;
// owner names an owner's user id. It refuses a directory that already holds
// files, so an export never mixes with an older one.
func WriteCurriculum(dir string, modules []*Module, content func(themeID int64) (string, error), owner func(Access) (string, error)) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: export into a new directory", dir)
	}
	for i, m := range modules {
		mdir := filepath.Join(dir, fmt.Sprintf("%02d-%s", i+1, m.Slug))
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return err
		}
		name, err := owner(m.Access)
		if err != nil {
			return err
		}
		head := fmt.Sprintf("---\nslug: %s\ntitle: %s\norder: %d\n%s---\n%s\n", m.Slug, m.Title, m.OrderIndex,
			accessLines(name, m.Published), m.Description)
		if err := os.WriteFile(filepath.Join(mdir, moduleFileName), []byte(head), 0o644); err != nil {
			return err
		}
		for j, t := range m.Themes {
			md, err := content(t.ID)
			if err != nil {
				return err
			}
			tname, err := owner(t.Access)
			if err != nil {
				return err
			}
			text := fmt.Sprintf("---\nslug: %s\ntitle: %s\norder: %d\nestimated_minutes: %d\n%s---\n%s", t.Slug, t.Title, t.OrderIndex, t.EstimatedMinutes,
				accessLines(tname, t.Published), md)
			short := strings.TrimPrefix(strings.TrimPrefix(t.Slug, m.Slug), "-")
			if short == "" {
				short = t.Slug
			}
			name := fmt.Sprintf("%02d-%s.md", j+1, short)
			if err := os.WriteFile(filepath.Join(mdir, name), []byte(text), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
