package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"tuxlab/internal/attempt"
	"tuxlab/internal/errs"
	"tuxlab/internal/lab"
	"tuxlab/internal/lesson"
)

// LabStore keeps laboratories, their tasks and attempts.
type LabStore struct{ *DB }

// Labs returns the laboratories' store over the shared pool.
func (s *DB) Labs() *LabStore { return &LabStore{s} }

var _ lab.Store = (*LabStore)(nil)

const (
	labColumns = `id, slug, module_id, template_id, title, description, time_limit_minutes, passing_score,
	setup_script, solution, owner_id, published, created_at, updated_at, machines`
	taskColumns       = `id, lab_id, position, title, description, hint, points, check_script, machine`
	labAttemptColumns = `id, lab_id, user_id, container_id, status, started_at, expires_at, finished_at, grading_since,
	points, max_points, score, passed, results, checks, last_check_at, checking_since, sandbox_removed_at, machines`
)

func scanLab(row scanner) (*lab.Lab, error) {
	var (
		l             lab.Lab
		module, owner sql.NullInt64
		machines      string
	)
	err := row.Scan(&l.ID, &l.Slug, &module, &l.TemplateID, &l.Title, &l.Description, &l.TimeLimitMinutes, &l.PassingScore,
		&l.Setup, &l.Solution, &owner, &l.Published, &l.CreatedAt, &l.UpdatedAt, &machines)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lab.ErrLabNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(machines), &l.Machines); err != nil {
		return nil, fmt.Errorf("lab %d machines: %w", l.ID, err)
	}
	if len(l.Machines) == 0 {
		l.Machines = nil
	}
	l.ModuleID, l.OwnerID = nullInt(module), nullInt(owner)
	l.CreatedAt, l.UpdatedAt = l.CreatedAt.UTC(), l.UpdatedAt.UTC()
	l.Tasks = []*lab.Task{}
	return &l, nil
}

type taskRow struct {
	labID int64
	*lab.Task
}

func scanTask(row scanner) (taskRow, error) {
	t := taskRow{Task: &lab.Task{}}
	err := row.Scan(&t.ID, &t.labID, &t.Position, &t.Title, &t.Description, &t.Hint, &t.Points, &t.Check, &t.Machine)
	return t, err
}

func scanLabAttempt(row scanner) (*lab.Attempt, error) {
	var (
		a                                            lab.Attempt
		container                                    sql.NullInt64
		finished, grading, lastCk, checking, removed sql.NullTime
		results, machines                            string
	)
	err := row.Scan(&a.ID, &a.LabID, &a.UserID, &container, &a.Status, &a.StartedAt, &a.ExpiresAt, &finished, &grading,
		&a.Points, &a.MaxPoints, &a.Score, &a.Passed, &results, &a.Checks, &lastCk, &checking, &removed, &machines)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lab.ErrAttemptNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(results), &a.Results); err != nil {
		return nil, fmt.Errorf("lab attempt %d results: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(machines), &a.Machines); err != nil {
		return nil, fmt.Errorf("lab attempt %d machines: %w", a.ID, err)
	}
	if len(a.Machines) == 0 {
		a.Machines = nil
	}
	a.ContainerID = nullInt(container)
	a.StartedAt, a.ExpiresAt = a.StartedAt.UTC(), a.ExpiresAt.UTC()
	a.FinishedAt, a.GradingSince, a.LastCheckAt = nullTime(finished), nullTime(grading), nullTime(lastCk)
	a.CheckingSince, a.SandboxRemovedAt = nullTime(checking), nullTime(removed)
	return &a, nil
}

func nullInt(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	return &v.Int64
}

func intArg(v *int64) any {
	if v == nil {
		return nil
	}
	return *v
}

// FindLabs returns labs with their tasks, by id.
func (s *LabStore) FindLabs(ctx context.Context, f lab.Filter) ([]*lab.Lab, error) {
	q, args := `SELECT `+labColumns+` FROM labs`, []any{}
	if f.ModuleID != nil {
		q, args = q+` WHERE module_id = $1`, append(args, *f.ModuleID)
	}
	labs, err := queryAll(ctx, s.q(ctx), scanLab, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	return labs, s.attachTasks(ctx, labs)
}

// attachTasks reads the tasks of labs in one query.
func (s *LabStore) attachTasks(ctx context.Context, labs []*lab.Lab) error {
	if len(labs) == 0 {
		return nil
	}
	byID := map[int64]*lab.Lab{}
	for _, l := range labs {
		byID[l.ID] = l
	}
	q, args := `SELECT `+taskColumns+` FROM lab_tasks ORDER BY lab_id, position`, []any{}
	if len(labs) == 1 {
		q, args = `SELECT `+taskColumns+` FROM lab_tasks WHERE lab_id = $1 ORDER BY position`, []any{labs[0].ID}
	}
	tasks, err := queryAll(ctx, s.q(ctx), scanTask, q, args...)
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if l := byID[t.labID]; l != nil {
			l.Tasks = append(l.Tasks, t.Task)
		}
	}
	return nil
}

func (s *LabStore) findLab(ctx context.Context, where string, arg any) (*lab.Lab, error) {
	l, err := scanLab(s.q(ctx).QueryRowContext(ctx, `SELECT `+labColumns+` FROM labs WHERE `+where+` = $1`, arg))
	if err != nil {
		return nil, err
	}
	return l, s.attachTasks(ctx, []*lab.Lab{l})
}

// FindLabByID returns a lab with its tasks.
func (s *LabStore) FindLabByID(ctx context.Context, id int64) (*lab.Lab, error) {
	return s.findLab(ctx, "id", id)
}

// FindLabBySlug returns a lab with its tasks.
func (s *LabStore) FindLabBySlug(ctx context.Context, slug string) (*lab.Lab, error) {
	return s.findLab(ctx, "slug", slug)
}

// labConflict names which unique rule a write broke.
func labConflict(err error) error {
	err = translate(err)
	switch {
	case errors.Is(err, ErrUnique) && strings.Contains(err.Error(), "module"):
		return lab.ErrModuleHasLab
	case errors.Is(err, ErrUnique):
		return lab.ErrSlugTaken
	case errors.Is(err, ErrForeignKey):
		return errMissingReference
	}
	return err
}

// errMissingReference refuses a module or template id that does not exist.
var errMissingReference = errs.E(errs.Conflict, "The module or sandbox template given does not exist")

// CreateLab inserts l and its tasks.
func (s *LabStore) CreateLab(ctx context.Context, l *lab.Lab) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO labs (slug, module_id, template_id, title, description, time_limit_minutes,
			passing_score, setup_script, solution, owner_id, published, created_at, updated_at, machines)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`,
			l.Slug, intArg(l.ModuleID), l.TemplateID, l.Title, l.Description, l.TimeLimitMinutes, l.PassingScore, l.Setup, l.Solution,
			intArg(l.OwnerID), l.Published, l.CreatedAt.UTC(), l.UpdatedAt.UTC(), resultsJSON(l.Machines)).Scan(&l.ID)
		if err != nil {
			return labConflict(err)
		}
		return writeTasks(ctx, tx, l.ID, nil, l.Tasks)
	})
}

// UpdateLab stores l and lays its tasks over the old ones by position.
func (s *LabStore) UpdateLab(ctx context.Context, l *lab.Lab) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE labs SET slug = $1, module_id = $2, template_id = $3, title = $4, description = $5,
			time_limit_minutes = $6, passing_score = $7, setup_script = $8, solution = $9, owner_id = $10, published = $11, updated_at = $12,
			machines = $13 WHERE id = $14`,
			l.Slug, intArg(l.ModuleID), l.TemplateID, l.Title, l.Description, l.TimeLimitMinutes, l.PassingScore, l.Setup, l.Solution,
			intArg(l.OwnerID), l.Published, l.UpdatedAt.UTC(), resultsJSON(l.Machines), l.ID)
		if err != nil {
			return labConflict(err)
		}
		if err := requireRow(res, lab.ErrLabNotFound); err != nil {
			return err
		}
		old, err := queryAll(ctx, tx, scanTask, `SELECT `+taskColumns+` FROM lab_tasks WHERE lab_id = $1 ORDER BY position`, l.ID)
		if err != nil {
			return err
		}
		return writeTasks(ctx, tx, l.ID, old, l.Tasks)
	})
}

// writeTasks updates the rows at positions both lists have, inserts the new
// ones and deletes those past the end, so task ids stay put.
func writeTasks(ctx context.Context, tx *sql.Tx, labID int64, old []taskRow, tasks []*lab.Task) error {
	for i, t := range tasks {
		t.Position = i
		if i < len(old) {
			t.ID = old[i].ID
			if _, err := tx.ExecContext(ctx, `UPDATE lab_tasks SET title = $1, description = $2, hint = $3, points = $4, check_script = $5,
				machine = $6 WHERE id = $7`, t.Title, t.Description, t.Hint, t.Points, t.Check, t.Machine, t.ID); err != nil {
				return err
			}
			continue
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO lab_tasks (lab_id, position, title, description, hint, points, check_script, machine)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, labID, i, t.Title, t.Description, t.Hint, t.Points, t.Check, t.Machine).Scan(&t.ID); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM lab_tasks WHERE lab_id = $1 AND position >= $2`, labID, len(tasks))
	return err
}

// DeleteLab removes a lab and its tasks; with attempts, only when cascade is set.
func (s *LabStore) DeleteLab(ctx context.Context, id int64, cascade bool) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM lab_attempts WHERE lab_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 && !cascade {
			return lab.ErrHasAttempts
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM labs WHERE id = $1`, id)
		if err != nil {
			return err
		}
		return requireRow(res, lab.ErrLabNotFound)
	})
}

// CountAttempts counts every attempt of a lab.
func (s *LabStore) CountAttempts(ctx context.Context, labID int64) (int, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM lab_attempts WHERE lab_id = $1`, labID).Scan(&n)
	return n, err
}

// CreateAttempt inserts a once allow accepts the start times of the user's
// attempts of the lab since the given time; a second open attempt of the same
// user and lab is attempt.ErrOpen. The user's row is locked, so concurrent
// starts count one after the other.
func (s *LabStore) CreateAttempt(ctx context.Context, a *lab.Attempt, since time.Time, allow func(started []time.Time) error) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var uid int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+s.dialect.ForUpdate, a.UserID).Scan(&uid); err != nil {
			return err
		}
		started, err := queryAll(ctx, tx, func(row scanner) (time.Time, error) {
			var at time.Time
			err := row.Scan(&at)
			return at.UTC(), err
		}, `SELECT started_at FROM lab_attempts WHERE user_id = $1 AND lab_id = $2 AND started_at >= $3 ORDER BY started_at`,
			a.UserID, a.LabID, since.UTC())
		if err != nil {
			return err
		}
		if err := allow(started); err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO lab_attempts (lab_id, user_id, container_id, status, started_at, expires_at,
			max_points, results, machines) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
			a.LabID, a.UserID, intArg(a.ContainerID), a.Status, a.StartedAt.UTC(), a.ExpiresAt.UTC(), a.MaxPoints, resultsJSON(a.Results),
			resultsJSON(a.Machines)).Scan(&a.ID)
		if errors.Is(translate(err), ErrUnique) {
			return attempt.ErrOpen
		}
		return err
	})
}

func resultsJSON[T any](r []T) string {
	if r == nil {
		return "[]"
	}
	b, _ := json.Marshal(r) // plain structs always encode
	return string(b)
}

// FindAttemptByID returns one attempt.
func (s *LabStore) FindAttemptByID(ctx context.Context, id int64) (*lab.Attempt, error) {
	return scanLabAttempt(s.q(ctx).QueryRowContext(ctx, `SELECT `+labAttemptColumns+` FROM lab_attempts WHERE id = $1`, id))
}

// FindOpenAttempt returns the user's open attempt of a lab.
func (s *LabStore) FindOpenAttempt(ctx context.Context, labID, userID int64) (*lab.Attempt, error) {
	return scanLabAttempt(s.q(ctx).QueryRowContext(ctx, `SELECT `+labAttemptColumns+` FROM lab_attempts
		WHERE lab_id = $1 AND user_id = $2 AND status IN ('in_progress', 'grading')`, labID, userID))
}

// FindAttempts returns the attempts f selects, oldest first.
func (s *LabStore) FindAttempts(ctx context.Context, f lab.AttemptFilter) ([]*lab.Attempt, error) {
	q := `SELECT ` + labAttemptColumns + ` FROM lab_attempts WHERE user_id = $1`
	if f.WithSandbox {
		// A lab's machines may outlive its first (a learner deleted it):
		// they are held until the lab records their removal.
		q += ` AND (container_id IS NOT NULL OR (machines <> '[]' AND sandbox_removed_at IS NULL))`
	}
	return queryAll(ctx, s.q(ctx), scanLabAttempt, q+` ORDER BY id`, f.UserID)
}

// UpdateAttempt applies change to an attempt with its row locked.
func (s *LabStore) UpdateAttempt(ctx context.Context, id int64, change func(*lab.Attempt) error) (*lab.Attempt, error) {
	var out *lab.Attempt
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		a, err := scanLabAttempt(tx.QueryRowContext(ctx, `SELECT `+labAttemptColumns+` FROM lab_attempts WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		if err := change(a); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE lab_attempts SET container_id = $1, status = $2, finished_at = $3, grading_since = $4,
			points = $5, max_points = $6, score = $7, passed = $8, results = $9, checks = $10, last_check_at = $11,
			checking_since = $12, sandbox_removed_at = $13, machines = $14 WHERE id = $15`,
			intArg(a.ContainerID), a.Status, timeArg(a.FinishedAt), timeArg(a.GradingSince), a.Points, a.MaxPoints, a.Score, a.Passed,
			resultsJSON(a.Results), a.Checks, timeArg(a.LastCheckAt), timeArg(a.CheckingSince), timeArg(a.SandboxRemovedAt),
			resultsJSON(a.Machines), a.ID)
		out = a
		return err
	})
	return out, err
}

// DeleteAttempt removes an attempt.
func (s *LabStore) DeleteAttempt(ctx context.Context, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM lab_attempts WHERE id = $1`, id)
	if err != nil {
		return err
	}
	return requireRow(res, lab.ErrAttemptNotFound)
}

// ModuleIDBySlug resolves a module's slug.
func (s *DB) ModuleIDBySlug(ctx context.Context, slug string) (int64, error) {
	var id int64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id FROM modules WHERE slug = $1`, slug).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, lesson.ErrModuleNotFound
	}
	return id, err
}

// ModuleSlugByID returns a module's slug.
func (s *DB) ModuleSlugByID(ctx context.Context, id int64) (string, error) {
	var slug string
	err := s.q(ctx).QueryRowContext(ctx, `SELECT slug FROM modules WHERE id = $1`, id).Scan(&slug)
	if errors.Is(err, sql.ErrNoRows) {
		return "", lesson.ErrModuleNotFound
	}
	return slug, err
}

// ModuleOwnerByID returns the owner of module id (nil: the system).
func (s *DB) ModuleOwnerByID(ctx context.Context, id int64) (*int64, error) {
	var owner sql.NullInt64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT owner_id FROM modules WHERE id = $1`, id).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lesson.ErrModuleNotFound
	}
	return nullInt(owner), err
}

// errNoOwner answers a file naming an owner that is no user here.
var errNoOwner = errs.E(errs.NotFound, "No user with this username")

// UserIDByName resolves the username a content file names as its owner.
func (s *DB) UserIDByName(ctx context.Context, username string) (int64, error) {
	var id int64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id FROM users WHERE lower(username) = lower($1)`, username).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errNoOwner
	}
	return id, err
}

// UserNameByID returns the username of user id, the owner an export names.
func (s *DB) UserNameByID(ctx context.Context, id int64) (string, error) {
	var name string
	err := s.q(ctx).QueryRowContext(ctx, `SELECT username FROM users WHERE id = $1`, id).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", errNoOwner
	}
	return name, err
}

// TemplateIDByName resolves a sandbox template's name.
func (s *DB) TemplateIDByName(ctx context.Context, name string) (int64, error) {
	t, err := s.Sandboxes().FindTemplateByName(ctx, name)
	if err != nil {
		return 0, err
	}
	return t.ID, nil
}

// TemplateNameByID returns a sandbox template's name.
func (s *DB) TemplateNameByID(ctx context.Context, id int64) (string, error) {
	t, err := s.Sandboxes().FindTemplateByID(ctx, id)
	if err != nil {
		return "", err
	}
	return t.Name, nil
}
