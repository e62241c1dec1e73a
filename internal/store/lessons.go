package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/errs"
	"tuxlab/internal/lesson"
)

// LessonStore keeps modules, themes, their content and learners' progress.
// Its writes join the transaction ctx carries from InTx.
type LessonStore struct{ *DB }

// Lessons returns the lessons' store over the shared pool.
func (s *DB) Lessons() *LessonStore { return &LessonStore{s} }

var _ lesson.Store = (*LessonStore)(nil)

const (
	moduleColumns = `id, slug, title, description, order_index, owner_id, published, created_at, updated_at`
	themeColumns  = `id, module_id, slug, title, order_index, estimated_minutes, owner_id, published, created_at, updated_at`
)

func scanModule(row scanner) (*lesson.Module, error) {
	var (
		m     lesson.Module
		owner sql.NullInt64
	)
	err := row.Scan(&m.ID, &m.Slug, &m.Title, &m.Description, &m.OrderIndex, &owner, &m.Published, &m.CreatedAt, &m.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lesson.ErrModuleNotFound
	}
	m.OwnerID = nullInt(owner)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return &m, err
}

func scanTheme(row scanner) (*lesson.Theme, error) {
	var (
		t     lesson.Theme
		owner sql.NullInt64
	)
	err := row.Scan(&t.ID, &t.ModuleID, &t.Slug, &t.Title, &t.OrderIndex, &t.EstimatedMinutes, &owner, &t.Published, &t.CreatedAt, &t.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lesson.ErrThemeNotFound
	}
	t.OwnerID = nullInt(owner)
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	return &t, err
}

// FindModules returns every module with its themes, ordered, in two queries.
func (s *LessonStore) FindModules(ctx context.Context) ([]*lesson.Module, error) {
	rows, err := s.q(ctx).QueryContext(ctx, `SELECT `+moduleColumns+` FROM modules ORDER BY order_index, id`)
	if err != nil {
		return nil, err
	}
	modules := []*lesson.Module{}
	byID := map[int64]*lesson.Module{}
	for rows.Next() {
		m, err := scanModule(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		m.Themes = []*lesson.Theme{}
		modules = append(modules, m)
		byID[m.ID] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = s.q(ctx).QueryContext(ctx, `SELECT `+themeColumns+` FROM themes ORDER BY module_id, order_index, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTheme(rows)
		if err != nil {
			return nil, err
		}
		if m := byID[t.ModuleID]; m != nil {
			m.Themes = append(m.Themes, t)
		}
	}
	return modules, rows.Err()
}

// FindModuleByID returns a module with its themes.
func (s *LessonStore) FindModuleByID(ctx context.Context, id int64) (*lesson.Module, error) {
	m, err := scanModule(s.q(ctx).QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`, id))
	if err != nil {
		return nil, err
	}
	rows, err := s.q(ctx).QueryContext(ctx, `SELECT `+themeColumns+` FROM themes WHERE module_id = $1 ORDER BY order_index, id`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m.Themes = []*lesson.Theme{}
	for rows.Next() {
		t, err := scanTheme(rows)
		if err != nil {
			return nil, err
		}
		m.Themes = append(m.Themes, t)
	}
	return m, rows.Err()
}

// FindThemeByID returns a theme without its content.
func (s *LessonStore) FindThemeByID(ctx context.Context, id int64) (*lesson.Theme, error) {
	return scanTheme(s.q(ctx).QueryRowContext(ctx, `SELECT `+themeColumns+` FROM themes WHERE id = $1`, id))
}

// FindThemeContent returns a theme's Markdown and rendered HTML.
func (s *LessonStore) FindThemeContent(ctx context.Context, themeID int64) (*lesson.Content, error) {
	c := lesson.Content{ThemeID: themeID}
	err := s.q(ctx).QueryRowContext(ctx, `SELECT content_md, content_html, content_updated_at FROM themes WHERE id = $1`, themeID).
		Scan(&c.Markdown, &c.HTML, &c.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lesson.ErrThemeNotFound
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return &c, err
}

// FindCompletions returns a user's completed themes and when.
func (s *LessonStore) FindCompletions(ctx context.Context, userID int64) (map[int64]time.Time, error) {
	rows, err := s.queryPrepared(ctx, `SELECT theme_id, completed_at FROM theme_completions WHERE user_id = $1`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]time.Time{}
	for rows.Next() {
		var id int64
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		out[id] = at.UTC()
	}
	return out, rows.Err()
}

// CompleteTheme records the completion once; a second call keeps the first
// time. It reports whether this call recorded it.
func (s *LessonStore) CompleteTheme(ctx context.Context, userID, themeID int64, at time.Time) (time.Time, bool, error) {
	var (
		out     time.Time
		created bool
	)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM themes WHERE id = $1`, themeID).Scan(&exists); err != nil {
			return err
		}
		if exists == 0 {
			return lesson.ErrThemeNotFound
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO theme_completions (user_id, theme_id, completed_at) VALUES ($1, $2, $3)
			ON CONFLICT (user_id, theme_id) DO NOTHING`, userID, themeID, at.UTC())
		if err != nil {
			return translate(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		created = n == 1
		return tx.QueryRowContext(ctx, `SELECT completed_at FROM theme_completions WHERE user_id = $1 AND theme_id = $2`, userID, themeID).Scan(&out)
	})
	return out.UTC(), created, err
}

// slugConflict turns a unique violation into lesson.ErrSlugTaken.
func slugConflict(err error) error {
	if err = translate(err); errors.Is(err, ErrUnique) {
		return lesson.ErrSlugTaken
	}
	return err
}

// CreateModule inserts m and sets its ID.
func (s *LessonStore) CreateModule(ctx context.Context, m *lesson.Module) error {
	err := s.q(ctx).QueryRowContext(ctx, `INSERT INTO modules (slug, title, description, order_index, owner_id, published, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, m.Slug, m.Title, m.Description, m.OrderIndex, intArg(m.OwnerID), m.Published,
		m.CreatedAt.UTC(), m.UpdatedAt.UTC()).Scan(&m.ID)
	return slugConflict(err)
}

// UpdateModule changes the given fields of module id.
func (s *LessonStore) UpdateModule(ctx context.Context, id int64, u lesson.ModuleUpdate, at time.Time) (*lesson.Module, error) {
	var out *lesson.Module
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		m, err := scanModule(tx.QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		set(&m.Slug, u.Slug)
		set(&m.Title, u.Title)
		set(&m.Description, u.Description)
		set(&m.OrderIndex, u.OrderIndex)
		set(&m.Published, u.Published)
		m.UpdatedAt = at.UTC()
		_, err = tx.ExecContext(ctx, `UPDATE modules SET slug = $1, title = $2, description = $3, order_index = $4, published = $5, updated_at = $6 WHERE id = $7`,
			m.Slug, m.Title, m.Description, m.OrderIndex, m.Published, m.UpdatedAt, id)
		out = m
		return slugConflict(err)
	})
	return out, err
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// DeleteModule removes module id; themes go with it only when cascade is set.
func (s *LessonStore) DeleteModule(ctx context.Context, id int64, cascade bool) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := scanModule(tx.QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`+s.dialect.ForUpdate, id)); err != nil {
			return err
		}
		var themes int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM themes WHERE module_id = $1`, id).Scan(&themes); err != nil {
			return err
		}
		if themes > 0 && !cascade {
			return lesson.ErrModuleHasThemes
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM themes WHERE module_id = $1`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM modules WHERE id = $1`, id)
		return err
	})
}

// ReorderModules sets order_index 1..n in the order of ids, which must name
// every module exactly once.
func (s *LessonStore) ReorderModules(ctx context.Context, ids []int64, at time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := samePermutation(ctx, tx, `SELECT id FROM modules`, ids); err != nil {
			return err
		}
		for i, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE modules SET order_index = $1, updated_at = $2 WHERE id = $3`, i+1, at.UTC(), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReorderThemes sets order_index 1..n for the themes of a module in the order of ids.
func (s *LessonStore) ReorderThemes(ctx context.Context, moduleID int64, ids []int64, at time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := scanModule(tx.QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`, moduleID)); err != nil {
			return err
		}
		if err := samePermutation(ctx, tx, `SELECT id FROM themes WHERE module_id = $1`, ids, moduleID); err != nil {
			return err
		}
		for i, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE themes SET order_index = $1, updated_at = $2 WHERE id = $3`, i+1, at.UTC(), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// samePermutation checks that ids lists exactly the ids the query returns
// (the service has already refused duplicates).
func samePermutation(ctx context.Context, tx *sql.Tx, query string, ids []int64, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	want := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		want[id] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// The service checked the ids against what it read; a difference here means
	// a concurrent change, which the caller should see and retry.
	changed := errs.E(errs.Conflict, "The lessons changed while reordering: reload and try again")
	if len(ids) != len(want) {
		return changed
	}
	for _, id := range ids {
		if !want[id] {
			return changed
		}
	}
	return nil
}

// CreateTheme inserts t with its content and sets its ID.
func (s *LessonStore) CreateTheme(ctx context.Context, t *lesson.Theme, c *lesson.Content) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := scanModule(tx.QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`, t.ModuleID)); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO themes (module_id, slug, title, order_index, estimated_minutes, content_md, content_html, content_updated_at,
			owner_id, published, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			t.ModuleID, t.Slug, t.Title, t.OrderIndex, t.EstimatedMinutes, c.Markdown, c.HTML, c.UpdatedAt.UTC(),
			intArg(t.OwnerID), t.Published, t.CreatedAt.UTC(), t.UpdatedAt.UTC()).Scan(&t.ID)
		c.ThemeID = t.ID
		return slugConflict(err)
	})
}

// UpdateTheme changes the given fields of theme id; a new module must exist.
func (s *LessonStore) UpdateTheme(ctx context.Context, id int64, u lesson.ThemeUpdate, at time.Time) (*lesson.Theme, error) {
	var out *lesson.Theme
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		t, err := scanTheme(tx.QueryRowContext(ctx, `SELECT `+themeColumns+` FROM themes WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		if u.ModuleID != nil && *u.ModuleID != t.ModuleID {
			if _, err := scanModule(tx.QueryRowContext(ctx, `SELECT `+moduleColumns+` FROM modules WHERE id = $1`, *u.ModuleID)); err != nil {
				return errs.Field([]any{"module_id"}, "No module with this id", "value_error")
			}
		}
		set(&t.ModuleID, u.ModuleID)
		set(&t.Slug, u.Slug)
		set(&t.Title, u.Title)
		set(&t.OrderIndex, u.OrderIndex)
		set(&t.EstimatedMinutes, u.EstimatedMinutes)
		set(&t.Published, u.Published)
		t.UpdatedAt = at.UTC()
		_, err = tx.ExecContext(ctx, `UPDATE themes SET module_id = $1, slug = $2, title = $3, order_index = $4, estimated_minutes = $5, published = $6, updated_at = $7 WHERE id = $8`,
			t.ModuleID, t.Slug, t.Title, t.OrderIndex, t.EstimatedMinutes, t.Published, t.UpdatedAt, id)
		out = t
		return slugConflict(err)
	})
	return out, err
}

// SetThemeContent replaces a theme's Markdown and HTML.
func (s *LessonStore) SetThemeContent(ctx context.Context, c *lesson.Content) error {
	res, err := s.q(ctx).ExecContext(ctx, `UPDATE themes SET content_md = $1, content_html = $2, content_updated_at = $3, updated_at = $3 WHERE id = $4`,
		c.Markdown, c.HTML, c.UpdatedAt.UTC(), c.ThemeID)
	if err != nil {
		return err
	}
	return requireRow(res, lesson.ErrThemeNotFound)
}

// DeleteTheme removes a theme and the completions of it.
func (s *LessonStore) DeleteTheme(ctx context.Context, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM themes WHERE id = $1`, id)
	if err != nil {
		return err
	}
	return requireRow(res, lesson.ErrThemeNotFound)
}

func requireRow(res sql.Result, notFound error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound
	}
	return nil
}

// ImportCurriculum upserts every module and theme of c by slug in one
// transaction: rows keep their ids (and so learners keep their progress),
// changed fields are updated, nothing is duplicated, and rows that c does not
// mention are left alone.
func (s *LessonStore) ImportCurriculum(ctx context.Context, c *lesson.Curriculum, at time.Time) (lesson.ImportReport, error) {
	var r lesson.ImportReport
	at = at.UTC()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		r = lesson.ImportReport{}
		owners := map[string]*int64{"": nil}
		owner := func(name string) (*int64, error) {
			if id, ok := owners[name]; ok {
				return id, nil
			}
			var id int64
			err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE lower(username) = lower($1)`, name).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("owner %q: %w", name, errNoOwner)
			}
			owners[name] = &id
			return &id, err
		}
		for _, mf := range c.Modules {
			mo, err := owner(mf.Owner)
			if err != nil {
				return fmt.Errorf("module %s: %w", mf.Slug, err)
			}
			moduleID, status, err := upsertModule(ctx, tx, mf, lesson.Access{OwnerID: mo, Published: mf.Published}, at)
			if err != nil {
				return fmt.Errorf("module %s: %w", mf.Slug, err)
			}
			count(status, &r.ModulesCreated, &r.ModulesUpdated, &r.ModulesUnchanged)
			for _, tf := range mf.Themes {
				to, err := owner(tf.Owner)
				if err != nil {
					return fmt.Errorf("theme %s: %w", tf.Slug, err)
				}
				status, err := upsertTheme(ctx, tx, moduleID, tf, lesson.Access{OwnerID: to, Published: tf.Published}, at)
				if err != nil {
					return fmt.Errorf("theme %s: %w", tf.Slug, err)
				}
				count(status, &r.ThemesCreated, &r.ThemesUpdated, &r.ThemesUnchanged)
			}
		}
		return nil
	})
	return r, err
}

type upsertStatus int

const (
	created upsertStatus = iota
	updated
	unchanged
)

func count(s upsertStatus, c, u, n *int) {
	switch s {
	case created:
		*c++
	case updated:
		*u++
	default:
		*n++
	}
}

func upsertModule(ctx context.Context, tx *sql.Tx, mf *lesson.ModuleFile, acc lesson.Access, at time.Time) (int64, upsertStatus, error) {
	var (
		id                 int64
		title, description string
		order              int
		owner              sql.NullInt64
		published          bool
	)
	err := tx.QueryRowContext(ctx, `SELECT id, title, description, order_index, owner_id, published FROM modules WHERE slug = $1`, mf.Slug).
		Scan(&id, &title, &description, &order, &owner, &published)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		err = tx.QueryRowContext(ctx, `INSERT INTO modules (slug, title, description, order_index, owner_id, published, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`,
			mf.Slug, mf.Title, mf.Description, mf.Order, intArg(acc.OwnerID), acc.Published, at).Scan(&id)
		return id, created, slugConflict(err)
	case err != nil:
		return 0, 0, err
	case title == mf.Title && description == mf.Description && order == mf.Order && sameAccess(owner, published, acc):
		return id, unchanged, nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE modules SET title = $1, description = $2, order_index = $3, owner_id = $4, published = $5, updated_at = $6 WHERE id = $7`,
		mf.Title, mf.Description, mf.Order, intArg(acc.OwnerID), acc.Published, at, id)
	return id, updated, err
}

// sameAccess reports whether a row's owner and published state are acc's.
func sameAccess(owner sql.NullInt64, published bool, acc lesson.Access) bool {
	cur := nullInt(owner)
	return published == acc.Published && (cur == nil) == (acc.OwnerID == nil) && (cur == nil || *cur == *acc.OwnerID)
}

func upsertTheme(ctx context.Context, tx *sql.Tx, moduleID int64, tf *lesson.ThemeFile, acc lesson.Access, at time.Time) (upsertStatus, error) {
	var (
		id, curModule  int64
		title, md      string
		order, minutes int
		owner          sql.NullInt64
		published      bool
	)
	err := tx.QueryRowContext(ctx, `SELECT id, module_id, title, order_index, estimated_minutes, content_md, owner_id, published FROM themes WHERE slug = $1`, tf.Slug).
		Scan(&id, &curModule, &title, &order, &minutes, &md, &owner, &published)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, `INSERT INTO themes (module_id, slug, title, order_index, estimated_minutes, content_md, content_html, content_updated_at,
			owner_id, published, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $8, $8)`, moduleID, tf.Slug, tf.Title, tf.Order, tf.EstimatedMinutes, tf.Markdown, tf.HTML, at,
			intArg(acc.OwnerID), acc.Published)
		return created, slugConflict(err)
	case err != nil:
		return 0, err
	case curModule == moduleID && title == tf.Title && order == tf.Order && minutes == tf.EstimatedMinutes && md == tf.Markdown && sameAccess(owner, published, acc):
		return unchanged, nil
	}
	_, err = tx.ExecContext(ctx, `UPDATE themes SET module_id = $1, title = $2, order_index = $3, estimated_minutes = $4,
		content_md = $5, content_html = $6, content_updated_at = CASE WHEN content_md = $5 THEN content_updated_at ELSE $7 END, updated_at = $7,
		owner_id = $9, published = $10 WHERE id = $8`,
		moduleID, tf.Title, tf.Order, tf.EstimatedMinutes, tf.Markdown, tf.HTML, at, id, intArg(acc.OwnerID), acc.Published)
	return updated, err
}

// CountLessons counts modules, themes and completions.
func (s *LessonStore) CountLessons(ctx context.Context) (lesson.Stats, error) {
	var st lesson.Stats
	err := s.q(ctx).QueryRowContext(ctx, `SELECT (SELECT count(*) FROM modules), (SELECT count(*) FROM themes), (SELECT count(*) FROM theme_completions)`).
		Scan(&st.Modules, &st.Themes, &st.Completions)
	return st, err
}
