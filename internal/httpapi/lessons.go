package httpapi

import (
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

type progressResponse struct {
	Completed int `json:"completed"`
	Total     int `json:"total"`
}

type themeSummary struct {
	ID               int64  `json:"id"`
	Slug             string `json:"slug"`
	Title            string `json:"title"`
	OrderIndex       int    `json:"order_index"`
	EstimatedMinutes int    `json:"estimated_minutes"`
	Completed        bool   `json:"completed"`
	ownership
}

type moduleResponse struct {
	ID          int64            `json:"id"`
	Slug        string           `json:"slug"`
	Title       string           `json:"title"`
	Name        string           `json:"name"`
	Description string           `json:"description"`
	OrderIndex  int              `json:"order_index"`
	Themes      []themeSummary   `json:"themes"`
	Progress    progressResponse `json:"progress"`
	ownership
}

func newModuleResponse(m lesson.ModuleProgress) moduleResponse {
	r := moduleResponse{ID: m.ID, Slug: m.Slug, Title: m.Title, Name: m.Title, Description: m.Description,
		OrderIndex: m.OrderIndex, Themes: make([]themeSummary, len(m.Themes)), Progress: progressResponse(m.Progress),
		ownership: newOwnership(m.Access)}
	for i, t := range m.Themes {
		r.Themes[i] = themeSummary{ID: t.ID, Slug: t.Slug, Title: t.Title, OrderIndex: t.OrderIndex,
			EstimatedMinutes: t.EstimatedMinutes, Completed: m.Done[i], ownership: newOwnership(t.Access)}
	}
	return r
}

type themeResponse struct {
	ID               int64      `json:"id"`
	Slug             string     `json:"slug"`
	ModuleID         int64      `json:"module_id"`
	Title            string     `json:"title"`
	OrderIndex       int        `json:"order_index"`
	EstimatedMinutes int        `json:"estimated_minutes"`
	Completed        bool       `json:"completed"`
	CompletedAt      *timestamp `json:"completed_at"`
	PreviousThemeID  *int64     `json:"previous_theme_id"`
	NextThemeID      *int64     `json:"next_theme_id"`
	ownership
}

func newThemeResponse(v *lesson.ThemeView) themeResponse {
	r := themeResponse{ID: v.ID, Slug: v.Slug, ModuleID: v.ModuleID, Title: v.Title, OrderIndex: v.OrderIndex,
		EstimatedMinutes: v.EstimatedMinutes, PreviousThemeID: v.PreviousThemeID, NextThemeID: v.NextThemeID,
		ownership: newOwnership(v.Access)}
	if v.CompletedAt != nil {
		ts := timestamp(*v.CompletedAt)
		r.Completed, r.CompletedAt = true, &ts
	}
	return r
}

type contentResponse struct {
	ThemeID   int64     `json:"theme_id"`
	Format    string    `json:"format"`
	Markdown  string    `json:"markdown"`
	HTML      string    `json:"html"`
	UpdatedAt timestamp `json:"updated_at"`
}

func newContentResponse(c *lesson.Content) contentResponse {
	return contentResponse{ThemeID: c.ThemeID, Format: "markdown", Markdown: c.Markdown, HTML: c.HTML, UpdatedAt: timestamp(c.UpdatedAt)}
}

func (s *Server) handleModules(w http.ResponseWriter, r *http.Request) error {
	modules, err := s.lessons.ModulesProgress(r.Context(), callerOf(r))
	if err != nil {
		return err
	}
	out := make(moduleList, len(modules))
	for i, m := range modules {
		out[i] = newModuleResponse(m)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// moduleList is the curriculum as GET /api/lessons/modules answers it, on
// every visit to the learner's home page; encoding/json's reflection was two
// thirds of that request's work. It writes itself as encoding/json would
// (see jsonAppender and TestModuleListJSONMatchesEncodingJSON).
type moduleList []moduleResponse

func (l moduleList) appendJSON(b []byte) ([]byte, bool) {
	if l == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, m := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = m.appendJSON(b)
	}
	return append(b, ']'), true
}

func (m moduleResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, m.ID, 10)
	b = append(b, `,"slug":`...)
	b = appendJSONString(b, m.Slug)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, m.Title)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, m.Name)
	b = append(b, `,"description":`...)
	b = appendJSONString(b, m.Description)
	b = append(b, `,"order_index":`...)
	b = strconv.AppendInt(b, int64(m.OrderIndex), 10)
	b = append(b, `,"themes":`...)
	if m.Themes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range m.Themes {
			if i > 0 {
				b = append(b, ',')
			}
			b = t.appendJSON(b)
		}
		b = append(b, ']')
	}
	b = append(b, `,"progress":{"completed":`...)
	b = strconv.AppendInt(b, int64(m.Progress.Completed), 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(m.Progress.Total), 10)
	b = append(b, '}')
	return append(m.ownership.appendJSON(b), '}')
}

// appendJSON writes o's fields, each after a comma, as encoding/json would.
func (o ownership) appendJSON(b []byte) []byte {
	b = append(b, `,"owner_id":`...)
	if o.OwnerID == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *o.OwnerID, 10)
	}
	b = append(b, `,"published":`...)
	return strconv.AppendBool(b, o.Published)
}

func (t themeSummary) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, t.ID, 10)
	b = append(b, `,"slug":`...)
	b = appendJSONString(b, t.Slug)
	b = append(b, `,"title":`...)
	b = appendJSONString(b, t.Title)
	b = append(b, `,"order_index":`...)
	b = strconv.AppendInt(b, int64(t.OrderIndex), 10)
	b = append(b, `,"estimated_minutes":`...)
	b = strconv.AppendInt(b, int64(t.EstimatedMinutes), 10)
	b = append(b, `,"completed":`...)
	b = strconv.AppendBool(b, t.Completed)
	return append(t.ownership.appendJSON(b), '}')
}

func (s *Server) handleTheme(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	return s.writeTheme(w, r, id)
}

// writeTheme answers with theme id as the caller sees it: neighbours and progress.
func (s *Server) writeTheme(w http.ResponseWriter, r *http.Request, id int64) error {
	v, err := s.lessons.Theme(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newThemeResponse(v))
	return nil
}

func (s *Server) handleThemeContent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	c, err := s.lessons.Content(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newContentResponse(c))
	return nil
}

type completionResponse struct {
	ThemeID     int64     `json:"theme_id"`
	Completed   bool      `json:"completed"`
	CompletedAt timestamp `json:"completed_at"`
}

func (s *Server) handleThemeComplete(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	at, err := s.lessons.Complete(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, completionResponse{ThemeID: id, Completed: true, CompletedAt: timestamp(at)})
	return nil
}

// Admin authoring. Inputs come as query parameters (the admin convention);
// lesson text comes as the request body.

func (s *Server) handleAdminCreateModule(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	n := lesson.NewModule{Title: q.requireStr("name"), OrderIndex: q.int("order_index", 0, 0, lesson.MaxOrderIndex)}
	n.Slug, _ = q.str("slug")
	n.Description, _ = q.str("description")
	n.Published = q.optBool("published")
	if err := q.err(); err != nil {
		return err
	}
	m, err := s.lessons.CreateModule(r.Context(), callerOf(r), n)
	if err != nil {
		return errs.In("query", err)
	}
	writeJSON(w, http.StatusCreated, newModuleResponse(lesson.ProgressOf(m, nil)))
	return nil
}

func (s *Server) handleAdminUpdateModule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "module_id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	var u lesson.ModuleUpdate
	u.Title = q.optStr("name")
	u.Slug = q.optStr("slug")
	u.Description = q.optStr("description")
	u.OrderIndex = q.optInt("order_index", 0, lesson.MaxOrderIndex)
	u.Published = q.optBool("published")
	if err := q.err(); err != nil {
		return err
	}
	m, err := s.lessons.UpdateModule(r.Context(), callerOf(r), id, u)
	if err != nil {
		return errs.In("query", err)
	}
	writeJSON(w, http.StatusOK, newModuleResponse(lesson.ProgressOf(m, nil)))
	return nil
}

func (s *Server) handleAdminDeleteModule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "module_id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	cascade := false
	if _, ok := q.str("cascade"); ok {
		cascade = q.boolean("cascade")
	}
	if err := q.err(); err != nil {
		return err
	}
	if err := s.lessons.DeleteModule(r.Context(), callerOf(r), id, cascade); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Module deleted", "id": id})
	return nil
}

func (s *Server) handleAdminReorderModules(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	ids := q.ids("module_ids")
	if err := q.err(); err != nil {
		return err
	}
	if err := s.lessons.ReorderModules(r.Context(), callerOf(r), ids); err != nil {
		return errs.In("query", err)
	}
	return s.handleModules(w, r)
}

func (s *Server) handleAdminReorderThemes(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "module_id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	ids := q.ids("theme_ids")
	if err := q.err(); err != nil {
		return err
	}
	if err := s.lessons.ReorderThemes(r.Context(), callerOf(r), id, ids); err != nil {
		return errs.In("query", err)
	}
	m, err := s.lessons.Module(r.Context(), callerOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newModuleResponse(lesson.ProgressOf(m, nil)))
	return nil
}

func (s *Server) handleAdminCreateTheme(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	n := lesson.NewTheme{
		ModuleID:         int64(q.requireInt("module_id", 1, 1<<62)),
		Title:            q.requireStr("title"),
		OrderIndex:       q.int("order_index", 0, 0, lesson.MaxOrderIndex),
		EstimatedMinutes: q.int("estimated_minutes", 10, 1, lesson.MaxMinutes),
	}
	n.Slug, _ = q.str("slug")
	n.Published = q.optBool("published")
	if err := q.err(); err != nil {
		return err
	}
	md, err := readMarkdown(r, false)
	if err != nil {
		return err
	}
	n.Markdown = md
	t, err := s.lessons.CreateTheme(r.Context(), callerOf(r), n)
	if err != nil {
		return errs.Relocate(err, themeLoc)
	}
	writeJSON(w, http.StatusCreated, newThemeResponse(&lesson.ThemeView{Theme: t}))
	return nil
}

func (s *Server) handleAdminUpdateTheme(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	q := newQuery(r)
	var u lesson.ThemeUpdate
	if v := q.optInt("module_id", 1, 1<<62); v != nil {
		mid := int64(*v)
		u.ModuleID = &mid
	}
	u.Title = q.optStr("title")
	u.Slug = q.optStr("slug")
	u.OrderIndex = q.optInt("order_index", 0, lesson.MaxOrderIndex)
	u.EstimatedMinutes = q.optInt("estimated_minutes", 1, lesson.MaxMinutes)
	u.Published = q.optBool("published")
	if err := q.err(); err != nil {
		return err
	}
	if _, err := s.lessons.UpdateTheme(r.Context(), callerOf(r), id, u); err != nil {
		return errs.In("query", err)
	}
	return s.writeTheme(w, r, id)
}

func (s *Server) handleAdminSetThemeContent(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	md, err := readMarkdown(r, true)
	if err != nil {
		return err
	}
	c, err := s.lessons.SetContent(r.Context(), callerOf(r), id, md)
	if err != nil {
		return errs.Relocate(err, themeLoc)
	}
	writeJSON(w, http.StatusOK, newContentResponse(c))
	return nil
}

func (s *Server) handleAdminDeleteTheme(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "theme_id")
	if err != nil {
		return err
	}
	if err := s.lessons.DeleteTheme(r.Context(), callerOf(r), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"detail": "Theme deleted", "id": id})
	return nil
}

// readMarkdown reads lesson text from the body: raw Markdown (text/markdown or
// text/plain), or JSON {"markdown": "..."} when the content type is JSON.
func readMarkdown(r *http.Request, required bool) (string, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if isJSONType(ct) {
		var body struct {
			Markdown *string `json:"markdown"`
		}
		if err := decodeJSON(r, &body); err != nil {
			return "", err
		}
		if body.Markdown == nil {
			return "", errs.Field([]any{"body", "markdown"}, "Field required", "missing")
		}
		return *body.Markdown, nil
	}
	b, err := io.ReadAll(r.Body)
	if isTooLarge(err) {
		return "", errBodyTooLarge
	}
	if err != nil {
		return "", errs.Field([]any{"body"}, "Could not read the request body", "body_read")
	}
	if !utf8.Valid(b) {
		return "", errs.Field([]any{"body"}, "Lesson content must be UTF-8 text", "unicode_error")
	}
	if required && len(strings.TrimSpace(string(b))) == 0 {
		return "", errs.Field([]any{"body"}, "Field required: send the lesson as Markdown", "missing")
	}
	return string(b), nil
}

// themeLoc places a field error of the lesson domain: the lesson text
// ("markdown") is the request body, every other field a query parameter.
func themeLoc(loc []any) []any {
	if len(loc) > 0 && loc[0] == "markdown" {
		return []any{"body"}
	}
	return append([]any{"query"}, loc...)
}
