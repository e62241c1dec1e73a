// Package lesson provides tuxlab's curriculum: modules of ordered themes, each
// theme a Markdown lesson rendered to safe HTML, the learners' progress, the
// admin authoring rules, and the curriculum as files (import and export).
package lesson

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"tuxlab/internal/actor"
	"tuxlab/internal/errs"
)

// Module is a group of themes; the contract also calls it a section.
// Title and Name are one value: the contract lists modules with a title and
// lets admins set a name.
type Module struct {
	ID          int64
	Slug        string
	Title       string
	Description string
	OrderIndex  int
	Themes      []*Theme // ordered by OrderIndex, then ID
	Access
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Theme is one lesson.
type Theme struct {
	ID               int64
	ModuleID         int64
	Slug             string
	Title            string
	OrderIndex       int
	EstimatedMinutes int
	Access
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Access says who owns an item of authored content and whether learners
// see it. Modules, themes, labs and exams share it.
type Access struct {
	// OwnerID is the user who created the item; nil for the system's
	// content (bundled or imported without an owner), which only admins change.
	OwnerID *int64
	// Published items are seen by every learner; a draft only by its owner
	// and admins.
	Published bool
}

// VisibleTo reports whether a sees the item: it is published, or a may change it.
func (x Access) VisibleTo(a actor.Actor) bool { return x.Published || a.CanChange(x.OwnerID) }

// Content is a theme's lesson text: the Markdown source and its sanitised HTML.
type Content struct {
	ThemeID   int64
	Markdown  string
	HTML      string
	UpdatedAt time.Time
}

// Completion records that a user completed a theme.
type Completion struct {
	ThemeID     int64
	CompletedAt time.Time
}

// Stats counts the curriculum and the learners' progress for admin statistics.
type Stats struct {
	Modules     int `json:"modules"`
	Themes      int `json:"themes"`
	Completions int `json:"completions"`
}

// ModuleUpdate holds the fields of a module to change; nil fields stay.
type ModuleUpdate struct {
	Slug        *string
	Title       *string
	Description *string
	OrderIndex  *int
	Published   *bool
}

// ThemeUpdate holds the fields of a theme to change; nil fields stay.
type ThemeUpdate struct {
	ModuleID         *int64
	Slug             *string
	Title            *string
	OrderIndex       *int
	EstimatedMinutes *int
	Published        *bool
}

// Store keeps the curriculum and progress. Missing rows are errs.NotFound
// errors (ErrModuleNotFound, ErrThemeNotFound); a taken slug is an errs.Conflict.
type Store interface {
	// FindModules returns every module with its themes, in curriculum order.
	FindModules(ctx context.Context) ([]*Module, error)
	FindModuleByID(ctx context.Context, id int64) (*Module, error)
	FindThemeByID(ctx context.Context, id int64) (*Theme, error)
	FindThemeContent(ctx context.Context, themeID int64) (*Content, error)
	// FindCompletions returns the user's completions keyed by theme id.
	FindCompletions(ctx context.Context, userID int64) (map[int64]time.Time, error)
	// CompleteTheme records a completion once and returns its time, old or
	// new, and whether this call recorded it.
	CompleteTheme(ctx context.Context, userID, themeID int64, at time.Time) (time.Time, bool, error)

	CreateModule(ctx context.Context, m *Module) error
	UpdateModule(ctx context.Context, id int64, u ModuleUpdate, at time.Time) (*Module, error)
	// DeleteModule removes a module; with themes it needs cascade, else ErrModuleHasThemes.
	DeleteModule(ctx context.Context, id int64, cascade bool) error
	ReorderModules(ctx context.Context, ids []int64, at time.Time) error

	CreateTheme(ctx context.Context, t *Theme, c *Content) error
	UpdateTheme(ctx context.Context, id int64, u ThemeUpdate, at time.Time) (*Theme, error)
	SetThemeContent(ctx context.Context, c *Content) error
	DeleteTheme(ctx context.Context, id int64) error
	ReorderThemes(ctx context.Context, moduleID int64, ids []int64, at time.Time) error

	// ImportCurriculum upserts modules and themes by slug in one
	// transaction, with the owners (usernames, resolved) and published
	// states the files give; an unknown owner is errs.NotFound.
	ImportCurriculum(ctx context.Context, c *Curriculum, at time.Time) (ImportReport, error)
	CountLessons(ctx context.Context) (Stats, error)
	// UserNameByID returns the username of an owner, for exports.
	UserNameByID(ctx context.Context, id int64) (string, error)
}

// Errors with fixed details.
var (
	ErrModuleNotFound  = errs.E(errs.NotFound, "Module not found")
	ErrThemeNotFound   = errs.E(errs.NotFound, "Theme not found")
	ErrModuleHasThemes = errs.E(errs.Conflict, "Module has themes: delete them first or pass cascade=true")
	ErrSlugTaken       = errs.E(errs.Conflict, "Slug already in use")
	// ErrForeignModule refuses an instructor's theme in a module of another author.
	ErrForeignModule = errs.E(errs.Forbidden, "Themes go only into modules you own: this module belongs to another author")
)

// Limits on authored fields.
const (
	MaxSlugLen        = 60
	MaxTitleLen       = 100
	MaxDescriptionLen = 2000
	MaxMarkdownBytes  = 256 << 10
	MaxMinutes        = 600
	MaxOrderIndex     = 1_000_000
)

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// checkSlug validates a slug at loc.
func checkSlug(f *errs.Fields, loc []any, slug string) {
	if len(slug) == 0 || len(slug) > MaxSlugLen || !slugPattern.MatchString(slug) {
		f.Add(loc, "Slug must be 1 to 60 characters of lower-case letters, digits and single dashes", "string_pattern_mismatch")
	}
}

// checkText validates a required single-line text of at most max characters.
func checkText(f *errs.Fields, loc []any, what, s string, max int) {
	switch n := utf8.RuneCountInString(s); {
	case strings.TrimSpace(s) == "":
		f.Add(loc, what+" must not be empty", "string_too_short")
	case n > max:
		f.Add(loc, what+" must be at most "+strconv.Itoa(max)+" characters", "string_too_long")
	case strings.ContainsAny(s, "\r\n"):
		f.Add(loc, what+" must be a single line", "value_error")
	}
}

func checkRange(f *errs.Fields, loc []any, what string, v, lo, hi int) {
	if v < lo || v > hi {
		f.Add(loc, what+" must be between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi), "range")
	}
}

// Slugify makes a slug from a title, for modules and themes created without one.
func Slugify(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > MaxSlugLen {
		s = strings.TrimRight(s[:MaxSlugLen], "-")
	}
	return s
}

// CheckSlug adds a problem at loc unless slug follows the curriculum's slug
// rules, which labs and exams share.
func CheckSlug(f *errs.Fields, loc []any, slug string) { checkSlug(f, loc, slug) }

// CheckTitle adds a problem at loc unless title is one non-empty line of at
// most MaxTitleLen characters.
func CheckTitle(f *errs.Fields, loc []any, title string) {
	checkText(f, loc, "Title", title, MaxTitleLen)
}
