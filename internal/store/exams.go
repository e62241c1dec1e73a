package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/attempt"
	"tuxlab/internal/exam"
)

// ExamStore keeps exams, their questions and attempts.
type ExamStore struct{ *DB }

// Exams returns the exams' store over the shared pool.
func (s *DB) Exams() *ExamStore { return &ExamStore{s} }

var _ exam.Store = (*ExamStore)(nil)

const (
	examColumns = `id, slug, module_id, template_id, title, description, time_limit_minutes, passing_score, max_attempts,
	owner_id, published, created_at, updated_at`
	questionColumns    = `id, exam_id, position, kind, prompt, options, points, explanation, answer_key`
	examAttemptColumns = `id, exam_id, user_id, status, started_at, expires_at, finished_at, grading_since,
	points, max_points, score, passed, answers, results, option_order, container_id, draft, draft_saved_at`
)

func scanExam(row scanner) (*exam.Exam, error) {
	var (
		e                       exam.Exam
		module, template, owner sql.NullInt64
	)
	err := row.Scan(&e.ID, &e.Slug, &module, &template, &e.Title, &e.Description, &e.TimeLimitMinutes, &e.PassingScore,
		&e.MaxAttempts, &owner, &e.Published, &e.CreatedAt, &e.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, exam.ErrExamNotFound
	}
	if err != nil {
		return nil, err
	}
	e.ModuleID, e.TemplateID, e.OwnerID = nullInt(module), nullInt(template), nullInt(owner)
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	e.Questions = []*exam.Question{}
	return &e, nil
}

type questionRow struct {
	examID int64
	*exam.Question
}

func scanQuestion(row scanner) (questionRow, error) {
	q := questionRow{Question: &exam.Question{}}
	var options, key string
	if err := row.Scan(&q.ID, &q.examID, &q.Position, &q.Kind, &q.Prompt, &options, &q.Points, &q.Explanation, &key); err != nil {
		return q, err
	}
	if err := json.Unmarshal([]byte(options), &q.Options); err != nil {
		return q, fmt.Errorf("question %d options: %w", q.ID, err)
	}
	if err := json.Unmarshal([]byte(key), &q.Key); err != nil {
		return q, fmt.Errorf("question %d key: %w", q.ID, err)
	}
	return q, nil
}

func scanExamAttempt(row scanner) (*exam.Attempt, error) {
	var (
		a                              exam.Attempt
		finished, grading, drafted     sql.NullTime
		answers, results, order, draft string
		container                      sql.NullInt64
	)
	err := row.Scan(&a.ID, &a.ExamID, &a.UserID, &a.Status, &a.StartedAt, &a.ExpiresAt, &finished, &grading,
		&a.Points, &a.MaxPoints, &a.Score, &a.Passed, &answers, &results, &order, &container, &draft, &drafted)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, exam.ErrAttemptNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(answers), &a.Answers); err != nil {
		return nil, fmt.Errorf("exam attempt %d answers: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(results), &a.Results); err != nil {
		return nil, fmt.Errorf("exam attempt %d results: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(order), &a.Order); err != nil {
		return nil, fmt.Errorf("exam attempt %d option order: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(draft), &a.Draft); err != nil {
		return nil, fmt.Errorf("exam attempt %d draft: %w", a.ID, err)
	}
	a.DraftSavedAt = nullTime(drafted)
	a.ContainerID = nullInt(container)
	a.StartedAt, a.ExpiresAt = a.StartedAt.UTC(), a.ExpiresAt.UTC()
	a.FinishedAt, a.GradingSince = nullTime(finished), nullTime(grading)
	return &a, nil
}

// FindExams returns every exam with its questions, by id.
func (s *ExamStore) FindExams(ctx context.Context) ([]*exam.Exam, error) {
	exams, err := queryAll(ctx, s.q(ctx), scanExam, `SELECT `+examColumns+` FROM exams ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return exams, s.attachQuestions(ctx, exams)
}

func (s *ExamStore) attachQuestions(ctx context.Context, exams []*exam.Exam) error {
	if len(exams) == 0 {
		return nil
	}
	byID := map[int64]*exam.Exam{}
	for _, e := range exams {
		byID[e.ID] = e
	}
	q, args := `SELECT `+questionColumns+` FROM exam_questions ORDER BY exam_id, position`, []any{}
	if len(exams) == 1 {
		q, args = `SELECT `+questionColumns+` FROM exam_questions WHERE exam_id = $1 ORDER BY position`, []any{exams[0].ID}
	}
	qs, err := queryAll(ctx, s.q(ctx), scanQuestion, q, args...)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if e := byID[q.examID]; e != nil {
			e.Questions = append(e.Questions, q.Question)
		}
	}
	return nil
}

func (s *ExamStore) findExam(ctx context.Context, where string, arg any) (*exam.Exam, error) {
	e, err := scanExam(s.q(ctx).QueryRowContext(ctx, `SELECT `+examColumns+` FROM exams WHERE `+where+` = $1`, arg))
	if err != nil {
		return nil, err
	}
	return e, s.attachQuestions(ctx, []*exam.Exam{e})
}

// FindExamByID returns an exam with its questions.
func (s *ExamStore) FindExamByID(ctx context.Context, id int64) (*exam.Exam, error) {
	return s.findExam(ctx, "id", id)
}

// FindExamBySlug returns an exam with its questions.
func (s *ExamStore) FindExamBySlug(ctx context.Context, slug string) (*exam.Exam, error) {
	return s.findExam(ctx, "slug", slug)
}

func examConflict(err error) error {
	err = translate(err)
	switch {
	case errors.Is(err, ErrUnique):
		return exam.ErrSlugTaken
	case errors.Is(err, ErrForeignKey):
		return errMissingReference
	}
	return err
}

// CreateExam inserts e and its questions.
func (s *ExamStore) CreateExam(ctx context.Context, e *exam.Exam) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO exams (slug, module_id, template_id, title, description, time_limit_minutes,
			passing_score, max_attempts, owner_id, published, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
			e.Slug, intArg(e.ModuleID), intArg(e.TemplateID), e.Title, e.Description, e.TimeLimitMinutes, e.PassingScore, e.MaxAttempts,
			intArg(e.OwnerID), e.Published, e.CreatedAt.UTC(), e.UpdatedAt.UTC()).Scan(&e.ID)
		if err != nil {
			return examConflict(err)
		}
		return writeQuestions(ctx, tx, e.ID, nil, e.Questions)
	})
}

// UpdateExam stores e and lays its questions over the old ones by position.
func (s *ExamStore) UpdateExam(ctx context.Context, e *exam.Exam) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE exams SET slug = $1, module_id = $2, template_id = $3, title = $4, description = $5,
			time_limit_minutes = $6, passing_score = $7, max_attempts = $8, owner_id = $9, published = $10, updated_at = $11 WHERE id = $12`,
			e.Slug, intArg(e.ModuleID), intArg(e.TemplateID), e.Title, e.Description, e.TimeLimitMinutes, e.PassingScore, e.MaxAttempts,
			intArg(e.OwnerID), e.Published, e.UpdatedAt.UTC(), e.ID)
		if err != nil {
			return examConflict(err)
		}
		if err := requireRow(res, exam.ErrExamNotFound); err != nil {
			return err
		}
		old, err := queryAll(ctx, tx, scanQuestion, `SELECT `+questionColumns+` FROM exam_questions WHERE exam_id = $1 ORDER BY position`, e.ID)
		if err != nil {
			return err
		}
		return writeQuestions(ctx, tx, e.ID, old, e.Questions)
	})
}

func writeQuestions(ctx context.Context, tx *sql.Tx, examID int64, old []questionRow, qs []*exam.Question) error {
	for i, q := range qs {
		q.Position = i
		options, key := jsonText(q.Options), jsonText(q.Key)
		if i < len(old) {
			q.ID = old[i].ID
			if _, err := tx.ExecContext(ctx, `UPDATE exam_questions SET kind = $1, prompt = $2, options = $3, points = $4,
				explanation = $5, answer_key = $6 WHERE id = $7`, q.Kind, q.Prompt, options, q.Points, q.Explanation, key, q.ID); err != nil {
				return err
			}
			continue
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO exam_questions (exam_id, position, kind, prompt, options, points, explanation,
			answer_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			examID, i, q.Kind, q.Prompt, options, q.Points, q.Explanation, key).Scan(&q.ID); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM exam_questions WHERE exam_id = $1 AND position >= $2`, examID, len(qs))
	return err
}

// DeleteExam removes an exam; with attempts, only when cascade is set.
func (s *ExamStore) DeleteExam(ctx context.Context, id int64, cascade bool) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM exam_attempts WHERE exam_id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n > 0 && !cascade {
			return exam.ErrHasAttempts
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM exams WHERE id = $1`, id)
		if err != nil {
			return err
		}
		return requireRow(res, exam.ErrExamNotFound)
	})
}

// CreateAttempt inserts a unless the user's attempts are used up or one is open.
// The user's row is locked, so concurrent starts count one after the other.
func (s *ExamStore) CreateAttempt(ctx context.Context, a *exam.Attempt, maxAttempts int) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var uid int64
		if err := tx.QueryRowContext(ctx, `SELECT id FROM users WHERE id = $1`+s.dialect.ForUpdate, a.UserID).Scan(&uid); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM exam_attempts WHERE exam_id = $1 AND user_id = $2`, a.ExamID, a.UserID).Scan(&n); err != nil {
			return err
		}
		if maxAttempts > 0 && n >= maxAttempts {
			return exam.ErrNoAttemptsLeft
		}
		err := tx.QueryRowContext(ctx, `INSERT INTO exam_attempts (exam_id, user_id, status, started_at, expires_at, max_points,
			option_order, container_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			a.ExamID, a.UserID, a.Status, a.StartedAt.UTC(), a.ExpiresAt.UTC(), a.MaxPoints, orderJSON(a.Order), intArg(a.ContainerID)).Scan(&a.ID)
		if errors.Is(translate(err), ErrUnique) {
			return attempt.ErrOpen
		}
		return err
	})
}

// orderJSON encodes an attempt's option order ({} for none).
func orderJSON(order map[int64][]int) string {
	if order == nil {
		return "{}"
	}
	b, _ := json.Marshal(order) // a map of int slices always encodes
	return string(b)
}

func scanID(row scanner) (int64, error) {
	var id int64
	err := row.Scan(&id)
	return id, err
}

// FindEndedAttemptSandboxes returns the sandboxes that still exist of the
// user's exam attempts that are over (submitted, expired, or in progress past
// their deadline at now), of any exam.
func (s *ExamStore) FindEndedAttemptSandboxes(ctx context.Context, userID int64, now time.Time) ([]int64, error) {
	return queryAll(ctx, s.q(ctx), scanID, `SELECT DISTINCT a.container_id FROM exam_attempts a JOIN containers c ON c.id = a.container_id
		WHERE a.user_id = $1 AND c.user_id = $1
		AND (a.status IN ('submitted', 'expired') OR (a.status = 'in_progress' AND a.expires_at <= $2))
		ORDER BY a.container_id`, userID, now.UTC())
}

// CountAttempts counts a user's attempts of an exam.
func (s *ExamStore) CountAttempts(ctx context.Context, examID, userID int64) (int, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM exam_attempts WHERE exam_id = $1 AND user_id = $2`, examID, userID).Scan(&n)
	return n, err
}

// FindAttemptByID returns one attempt.
func (s *ExamStore) FindAttemptByID(ctx context.Context, id int64) (*exam.Attempt, error) {
	return scanExamAttempt(s.q(ctx).QueryRowContext(ctx, `SELECT `+examAttemptColumns+` FROM exam_attempts WHERE id = $1`, id))
}

// FindOpenAttempt returns the user's open attempt of an exam.
func (s *ExamStore) FindOpenAttempt(ctx context.Context, examID, userID int64) (*exam.Attempt, error) {
	return scanExamAttempt(s.q(ctx).QueryRowContext(ctx, `SELECT `+examAttemptColumns+` FROM exam_attempts
		WHERE exam_id = $1 AND user_id = $2 AND status IN ('in_progress', 'grading')`, examID, userID))
}

// UpdateAttempt applies change to an attempt with its row locked.
func (s *ExamStore) UpdateAttempt(ctx context.Context, id int64, change func(*exam.Attempt) error) (*exam.Attempt, error) {
	var out *exam.Attempt
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		a, err := scanExamAttempt(tx.QueryRowContext(ctx, `SELECT `+examAttemptColumns+` FROM exam_attempts WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		if err := change(a); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE exam_attempts SET status = $1, finished_at = $2, grading_since = $3, points = $4,
			max_points = $5, score = $6, passed = $7, answers = $8, results = $9 WHERE id = $10`,
			a.Status, timeArg(a.FinishedAt), timeArg(a.GradingSince), a.Points, a.MaxPoints, a.Score, a.Passed,
			resultsJSON(a.Answers), resultsJSON(a.Results), a.ID)
		out = a
		return err
	})
	return out, err
}
