package lesson

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Service is the lesson domain: reading the curriculum with a learner's
// progress, completing themes, and the admin authoring rules.
type Service struct {
	store    Store
	activity activity.Log
	render   *Renderer
	now      func() time.Time
	cache    curriculumCache
}

// CacheTTL bounds how stale the cached curriculum may be when another tuxlab
// process (sharing the database) edits it; edits through this process
// invalidate the cache at once.
const CacheTTL = 2 * time.Second

// curriculumCache holds the modules and themes, which every learner reads on
// every page and admins change rarely.
type curriculumCache struct {
	mu      sync.Mutex
	modules []*Module
	loaded  time.Time
}

// NewService returns a Service over store; now is the clock (nil for time.Now).
// NewService returns a Service that records completions in log (nil: none).
func NewService(store Store, log activity.Log, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = activity.Discard
	}
	return &Service{store: store, activity: log, render: NewRenderer(), now: now}
}

func (s *Service) stamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Modules returns the curriculum as learners see it, published modules and
// themes only, in order, and the user's completions. The modules are shared:
// callers must not modify them.
func (s *Service) Modules(ctx context.Context, userID int64) ([]*Module, map[int64]time.Time, error) {
	return s.ModulesFor(ctx, actor.User(userID))
}

// ModulesFor returns the curriculum as a sees it (published items, and the
// drafts a may change) and a's completions. The modules are shared: callers
// must not modify them.
func (s *Service) ModulesFor(ctx context.Context, a actor.Actor) ([]*Module, map[int64]time.Time, error) {
	modules, err := s.curriculum(ctx)
	if err != nil {
		return nil, nil, err
	}
	done, err := s.store.FindCompletions(ctx, a.UserID)
	return visibleTo(a, modules), done, err
}

// visibleTo returns the modules and themes a sees, sharing what it can.
func visibleTo(a actor.Actor, modules []*Module) []*Module {
	out := make([]*Module, 0, len(modules))
	for _, m := range modules {
		if !m.VisibleTo(a) {
			continue
		}
		all := true
		for _, t := range m.Themes {
			all = all && t.VisibleTo(a)
		}
		if all {
			out = append(out, m)
			continue
		}
		c := *m
		c.Themes = make([]*Theme, 0, len(m.Themes))
		for _, t := range m.Themes {
			if t.VisibleTo(a) {
				c.Themes = append(c.Themes, t)
			}
		}
		out = append(out, &c)
	}
	return out
}

// curriculum returns the cached modules, reloading them when stale.
func (s *Service) curriculum(ctx context.Context) ([]*Module, error) {
	c := &s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.modules != nil && time.Since(c.loaded) < CacheTTL {
		return c.modules, nil
	}
	modules, err := s.store.FindModules(ctx)
	if err != nil {
		return nil, err
	}
	c.modules, c.loaded = modules, time.Now()
	return modules, nil
}

// changed drops the cached curriculum after a write.
func (s *Service) changed() {
	s.cache.mu.Lock()
	s.cache.modules = nil
	s.cache.mu.Unlock()
}

// ThemeView is a theme with its place in the curriculum and the caller's progress.
type ThemeView struct {
	*Theme
	CompletedAt     *time.Time
	PreviousThemeID *int64 // the theme before, across module boundaries
	NextThemeID     *int64 // the theme after, across module boundaries
}

// Theme returns a theme with its neighbours in curriculum order as a sees
// it; a theme a does not see (a draft of another author, or in one) is
// ErrThemeNotFound.
func (s *Service) Theme(ctx context.Context, a actor.Actor, id int64) (*ThemeView, error) {
	modules, done, err := s.ModulesFor(ctx, a)
	if err != nil {
		return nil, err
	}
	var order []*Theme
	for _, m := range modules {
		order = append(order, m.Themes...)
	}
	for i, t := range order {
		if t.ID != id {
			continue
		}
		v := &ThemeView{Theme: t}
		if at, ok := done[id]; ok {
			v.CompletedAt = &at
		}
		if i > 0 {
			v.PreviousThemeID = &order[i-1].ID
		}
		if i+1 < len(order) {
			v.NextThemeID = &order[i+1].ID
		}
		return v, nil
	}
	return nil, ErrThemeNotFound
}

// Content returns a theme's Markdown and sanitised HTML, when a sees the theme.
func (s *Service) Content(ctx context.Context, a actor.Actor, id int64) (*Content, error) {
	if err := s.sees(ctx, a, id); err != nil {
		return nil, err
	}
	return s.store.FindThemeContent(ctx, id)
}

// sees returns ErrThemeNotFound unless a sees theme id.
func (s *Service) sees(ctx context.Context, a actor.Actor, id int64) error {
	modules, err := s.curriculum(ctx)
	if err != nil {
		return err
	}
	for _, m := range modules {
		for _, t := range m.Themes {
			if t.ID == id {
				if m.VisibleTo(a) && t.VisibleTo(a) {
					return nil
				}
				return ErrThemeNotFound
			}
		}
	}
	// Not in the cache: it may be newer than the cache, so ask the store.
	t, err := s.store.FindThemeByID(ctx, id)
	if err != nil {
		return err
	}
	m, err := s.store.FindModuleByID(ctx, t.ModuleID)
	if err != nil {
		return err
	}
	if !m.VisibleTo(a) || !t.VisibleTo(a) {
		return ErrThemeNotFound
	}
	return nil
}

// Complete records that a completed theme id, which a must see; it is
// idempotent and returns the time of the first completion.
func (s *Service) Complete(ctx context.Context, a actor.Actor, id int64) (time.Time, error) {
	if err := s.sees(ctx, a, id); err != nil {
		return time.Time{}, err
	}
	userID := a.UserID
	now := s.stamp()
	var at time.Time
	err := s.activity.InTx(ctx, func(ctx context.Context) error {
		var (
			created bool
			err     error
		)
		if at, created, err = s.store.CompleteTheme(ctx, userID, id, now); err != nil || !created {
			return err // a repeated completion is recorded once
		}
		e := &activity.Event{UserID: userID, Kind: activity.ThemeCompleted, At: now, SubjectID: id}
		if t, err := s.store.FindThemeByID(ctx, id); err == nil {
			e.Title, e.ModuleID = t.Title, &t.ModuleID
		}
		return s.activity.Record(ctx, e)
	})
	return at, err
}

// Stats counts the curriculum and completions.
func (s *Service) Stats(ctx context.Context) (Stats, error) { return s.store.CountLessons(ctx) }

// NewModule is the input to create a module.
type NewModule struct {
	Slug        string // made from the title when empty
	Title       string
	Description string
	OrderIndex  int
	Published   *bool // nil: published when an admin creates it, a draft when an instructor does
}

// publishedOr is *p, or the default for content a creates.
func publishedOr(p *bool, a actor.Actor) bool {
	if p != nil {
		return *p
	}
	return a.PublishesByDefault()
}

// CreateModule validates and stores a new module owned by a.
func (s *Service) CreateModule(ctx context.Context, a actor.Actor, n NewModule) (*Module, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	defer s.changed()
	var f errs.Fields
	n.Title, n.Slug = checkNew(&f, "name", "Name", n.Title, n.Slug)
	checkDescription(&f, n.Description)
	checkRange(&f, []any{"order_index"}, "order_index", n.OrderIndex, 0, MaxOrderIndex)
	if err := f.Err(); err != nil {
		return nil, err
	}
	now := s.stamp()
	m := &Module{Slug: n.Slug, Title: n.Title, Description: n.Description, OrderIndex: n.OrderIndex,
		Themes: []*Theme{}, Access: Access{OwnerID: a.OwnerID(), Published: publishedOr(n.Published, a)}, CreatedAt: now, UpdatedAt: now}
	return m, s.store.CreateModule(ctx, m)
}

// checkNew validates a new module's or theme's title (the field, shown as
// label) and slug, made from the title when empty, and returns both, the
// title trimmed.
func checkNew(f *errs.Fields, field, label, title, slug string) (string, string) {
	if slug == "" {
		slug = Slugify(title)
	}
	return *checkNaming(f, field, label, &title, &slug), slug
}

// checkNaming validates the title (the field, shown as label) and the slug
// an update gives, and returns the title trimmed.
func checkNaming(f *errs.Fields, field, label string, title, slug *string) *string {
	var trimmed *string
	if title != nil {
		checkText(f, []any{field}, label, *title, MaxTitleLen)
		t := strings.TrimSpace(*title)
		trimmed = &t
	}
	if slug != nil {
		checkSlug(f, []any{"slug"}, *slug)
	}
	return trimmed
}

func checkDescription(f *errs.Fields, d string) {
	if len([]rune(d)) > MaxDescriptionLen {
		f.Add([]any{"description"}, "Description must be at most 2000 characters", "string_too_long")
	}
}

// UpdateModule validates and applies the fields given; a must be allowed to
// change the module.
func (s *Service) UpdateModule(ctx context.Context, a actor.Actor, id int64, u ModuleUpdate) (*Module, error) {
	if err := s.mayChangeModule(ctx, a, id, false); err != nil {
		return nil, err
	}
	defer s.changed()
	var f errs.Fields
	u.Title = checkNaming(&f, "name", "Name", u.Title, u.Slug)
	if u.Description != nil {
		checkDescription(&f, *u.Description)
	}
	if u.OrderIndex != nil {
		checkRange(&f, []any{"order_index"}, "order_index", *u.OrderIndex, 0, MaxOrderIndex)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if _, err := s.store.UpdateModule(ctx, id, u, s.stamp()); err != nil {
		return nil, err
	}
	return s.store.FindModuleByID(ctx, id)
}

// mayChangeModule returns nil when a may change module id (and, with
// themes, each of its themes); a missing module is ErrModuleNotFound.
func (s *Service) mayChangeModule(ctx context.Context, a actor.Actor, id int64, themes bool) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	m, err := s.store.FindModuleByID(ctx, id)
	if err != nil {
		return err
	}
	if err := a.MayChange(m.OwnerID); err != nil {
		return err
	}
	for _, t := range m.Themes {
		if themes && !a.CanChange(t.OwnerID) {
			return errs.E(errs.Forbidden, "The module holds a theme of another author: only its owner or an admin may change it")
		}
	}
	return nil
}

// DeleteModule removes a module; one with themes needs cascade, and a must
// be allowed to change the module and each of its themes.
func (s *Service) DeleteModule(ctx context.Context, a actor.Actor, id int64, cascade bool) error {
	if err := s.mayChangeModule(ctx, a, id, cascade); err != nil {
		return err
	}
	defer s.changed()
	return s.store.DeleteModule(ctx, id, cascade)
}

// ReorderModules puts every module in the order of ids, which must name each
// module exactly once.
func (s *Service) ReorderModules(ctx context.Context, a actor.Actor, ids []int64) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	defer s.changed()
	modules, err := s.store.FindModules(ctx)
	if err != nil {
		return err
	}
	current := make([]int64, len(modules))
	for i, m := range modules {
		if !a.CanChange(m.OwnerID) {
			return errs.E(errs.Forbidden, "Reordering the modules moves modules of other authors: only an admin may")
		}
		current[i] = m.ID
	}
	if err := checkPermutation("module_ids", ids, current); err != nil {
		return err
	}
	return s.store.ReorderModules(ctx, ids, s.stamp())
}

// ReorderThemes puts every theme of a module in the order of ids, which must
// name each of its themes exactly once; a must be allowed to change the
// module and each of its themes.
func (s *Service) ReorderThemes(ctx context.Context, a actor.Actor, moduleID int64, ids []int64) error {
	if err := s.mayChangeModule(ctx, a, moduleID, true); err != nil {
		return err
	}
	defer s.changed()
	m, err := s.store.FindModuleByID(ctx, moduleID)
	if err != nil {
		return err
	}
	current := make([]int64, len(m.Themes))
	for i, t := range m.Themes {
		current[i] = t.ID
	}
	if err := checkPermutation("theme_ids", ids, current); err != nil {
		return err
	}
	return s.store.ReorderThemes(ctx, moduleID, ids, s.stamp())
}

// checkPermutation requires ids to hold each of current exactly once.
func checkPermutation(param string, ids, current []int64) error {
	want := make(map[int64]bool, len(current))
	for _, id := range current {
		want[id] = true
	}
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if !want[id] || seen[id] {
			break
		}
		seen[id] = true
	}
	if len(seen) != len(want) || len(ids) != len(current) {
		return errs.Field([]any{param}, fmt.Sprintf("%s must list each of the %d current ids exactly once, comma-separated", param, len(current)), "value_error")
	}
	return nil
}

// Module returns one module with the themes a sees; a module a does not
// see is ErrModuleNotFound.
func (s *Service) Module(ctx context.Context, a actor.Actor, id int64) (*Module, error) {
	m, err := s.store.FindModuleByID(ctx, id)
	if err != nil {
		return nil, err
	}
	v := visibleTo(a, []*Module{m})
	if len(v) == 0 {
		return nil, ErrModuleNotFound
	}
	return v[0], nil
}

// NewTheme is the input to create a theme.
type NewTheme struct {
	ModuleID         int64
	Slug             string // made from the title when empty
	Title            string
	OrderIndex       int
	EstimatedMinutes int
	Markdown         string
	Published        *bool // nil: published when an admin creates it, a draft when an instructor does
}

// CreateTheme validates, renders and stores a new theme owned by a, in a
// module a may change.
func (s *Service) CreateTheme(ctx context.Context, a actor.Actor, n NewTheme) (*Theme, error) {
	if err := a.MayAuthor(); err != nil {
		return nil, err
	}
	if err := s.mayUseModule(ctx, a, n.ModuleID); err != nil {
		return nil, err
	}
	defer s.changed()
	var f errs.Fields
	n.Title, n.Slug = checkNew(&f, "title", "Title", n.Title, n.Slug)
	checkRange(&f, []any{"order_index"}, "order_index", n.OrderIndex, 0, MaxOrderIndex)
	checkRange(&f, []any{"estimated_minutes"}, "estimated_minutes", n.EstimatedMinutes, 1, MaxMinutes)
	checkMarkdown(&f, n.Markdown)
	if err := f.Err(); err != nil {
		return nil, err
	}
	html, err := s.render.Render(n.Markdown)
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	t := &Theme{ModuleID: n.ModuleID, Slug: n.Slug, Title: n.Title, OrderIndex: n.OrderIndex,
		EstimatedMinutes: n.EstimatedMinutes, Access: Access{OwnerID: a.OwnerID(), Published: publishedOr(n.Published, a)},
		CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateTheme(ctx, t, &Content{Markdown: n.Markdown, HTML: html, UpdatedAt: now}); err != nil {
		if errs.Is(err, errs.NotFound) {
			return nil, errs.Field([]any{"module_id"}, "No module with this id", "value_error")
		}
		return nil, err
	}
	return t, nil
}

func checkMarkdown(f *errs.Fields, md string) {
	if len(md) > MaxMarkdownBytes {
		f.Add([]any{"markdown"}, "Lesson content must be at most 256 KiB", "string_too_long")
	}
}

// mayUseModule refuses a theme in module id unless a may change the module
// (an unknown module is a field problem of module_id).
func (s *Service) mayUseModule(ctx context.Context, a actor.Actor, id int64) error {
	m, err := s.store.FindModuleByID(ctx, id)
	if errs.Is(err, errs.NotFound) {
		return errs.Field([]any{"module_id"}, "No module with this id", "value_error")
	}
	if err != nil {
		return err
	}
	if !a.CanChange(m.OwnerID) {
		return ErrForeignModule
	}
	return nil
}

// mayChangeTheme returns nil when a may change theme id; a missing theme is
// ErrThemeNotFound.
func (s *Service) mayChangeTheme(ctx context.Context, a actor.Actor, id int64) error {
	if err := a.MayAuthor(); err != nil {
		return err
	}
	t, err := s.store.FindThemeByID(ctx, id)
	if err != nil {
		return err
	}
	return a.MayChange(t.OwnerID)
}

// UpdateTheme validates and applies the fields given; a must be allowed to
// change the theme, and the module it moves to.
func (s *Service) UpdateTheme(ctx context.Context, a actor.Actor, id int64, u ThemeUpdate) (*Theme, error) {
	if err := s.mayChangeTheme(ctx, a, id); err != nil {
		return nil, err
	}
	if u.ModuleID != nil {
		if err := s.mayUseModule(ctx, a, *u.ModuleID); err != nil {
			return nil, err
		}
	}
	defer s.changed()
	var f errs.Fields
	u.Title = checkNaming(&f, "title", "Title", u.Title, u.Slug)
	if u.OrderIndex != nil {
		checkRange(&f, []any{"order_index"}, "order_index", *u.OrderIndex, 0, MaxOrderIndex)
	}
	if u.EstimatedMinutes != nil {
		checkRange(&f, []any{"estimated_minutes"}, "estimated_minutes", *u.EstimatedMinutes, 1, MaxMinutes)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	return s.store.UpdateTheme(ctx, id, u, s.stamp())
}

// SetContent replaces a theme's lesson text and re-renders it.
func (s *Service) SetContent(ctx context.Context, a actor.Actor, id int64, markdown string) (*Content, error) {
	if err := s.mayChangeTheme(ctx, a, id); err != nil {
		return nil, err
	}
	defer s.changed()
	var f errs.Fields
	checkMarkdown(&f, markdown)
	if err := f.Err(); err != nil {
		return nil, err
	}
	html, err := s.render.Render(markdown)
	if err != nil {
		return nil, err
	}
	c := &Content{ThemeID: id, Markdown: markdown, HTML: html, UpdatedAt: s.stamp()}
	return c, s.store.SetThemeContent(ctx, c)
}

// DeleteTheme removes a theme and its completions.
func (s *Service) DeleteTheme(ctx context.Context, a actor.Actor, id int64) error {
	if err := s.mayChangeTheme(ctx, a, id); err != nil {
		return err
	}
	defer s.changed()
	return s.store.DeleteTheme(ctx, id)
}

// Import reads a curriculum from fsys, renders it and upserts it by slug.
// progress, when not nil, hears about each step.
func (s *Service) Import(ctx context.Context, fsys fs.FS, progress func(format string, args ...any)) (ImportReport, error) {
	defer s.changed()
	if progress == nil {
		progress = func(string, ...any) {}
	}
	c, err := ReadCurriculum(fsys)
	if err != nil {
		return ImportReport{}, err
	}
	total := 0
	for _, m := range c.Modules {
		total += len(m.Themes)
	}
	progress("read %d modules, %d themes", len(c.Modules), total)
	n := 0
	for _, m := range c.Modules {
		for _, t := range m.Themes {
			if t.HTML, err = s.render.Render(t.Markdown); err != nil {
				return ImportReport{}, err
			}
			n++
		}
		progress("rendered %d/%d themes (%s)", n, total, m.Slug)
	}
	r, err := s.store.ImportCurriculum(ctx, c, s.stamp())
	if err != nil {
		return r, err
	}
	progress("imported: %s", r)
	return r, nil
}

// ImportIfEmpty imports the curriculum when the database has no module yet,
// so a fresh install starts with lessons. It reports whether it imported.
func (s *Service) ImportIfEmpty(ctx context.Context, fsys fs.FS) (bool, ImportReport, error) {
	st, err := s.store.CountLessons(ctx)
	if err != nil || st.Modules > 0 {
		return false, ImportReport{}, err
	}
	r, err := s.Import(ctx, fsys, nil)
	return err == nil, r, err
}

// Export writes the curriculum from the database to dir as files.
func (s *Service) Export(ctx context.Context, dir string) (int, error) {
	modules, err := s.store.FindModules(ctx)
	if err != nil {
		return 0, err
	}
	themes := 0
	for _, m := range modules {
		themes += len(m.Themes)
	}
	return themes, WriteCurriculum(dir, modules, func(id int64) (string, error) {
		c, err := s.store.FindThemeContent(ctx, id)
		if err != nil {
			return "", err
		}
		return c.Markdown, nil
	}, func(a Access) (string, error) {
		if a.OwnerID == nil {
			return "", nil
		}
		return s.store.UserNameByID(ctx, *a.OwnerID)
	})
}
