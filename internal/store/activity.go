package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/activity"
	"tuxlab/internal/dashboard"
)

// ActivityStore keeps the activity records and reads the dashboard's numbers.
type ActivityStore struct{ *DB }

// Activity returns the activity store over the shared pool.
func (s *DB) Activity() *ActivityStore { return &ActivityStore{s} }

var _ activity.Log = (*ActivityStore)(nil)

const activityColumns = `id, user_id, kind, at, subject_id, title, score, passed, module_id`

func scanEvent(row scanner) (*activity.Event, error) {
	var (
		e      activity.Event
		score  sql.NullInt64
		passed sql.NullBool
		module sql.NullInt64
	)
	if err := row.Scan(&e.ID, &e.UserID, &e.Kind, &e.At, &e.SubjectID, &e.Title, &score, &passed, &module); err != nil {
		return nil, err
	}
	e.At = e.At.UTC()
	if score.Valid {
		n := int(score.Int64)
		e.Score = &n
	}
	if passed.Valid {
		e.Passed = &passed.Bool
	}
	e.ModuleID = nullInt(module)
	return &e, nil
}

// Record inserts e in the transaction ctx carries, if any.
func (s *ActivityStore) Record(ctx context.Context, e *activity.Event) error {
	var score, passed any
	if e.Score != nil {
		score = *e.Score
	}
	if e.Passed != nil {
		passed = *e.Passed
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO activity (user_id, kind, at, subject_id, title, score, passed, module_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			e.UserID, e.Kind, e.At.UTC(), e.SubjectID, e.Title, score, passed, intArg(e.ModuleID)).Scan(&e.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO activity_quarters (user_id, quarter, events) VALUES ($1, $2, 1)
			ON CONFLICT (user_id, quarter) DO UPDATE SET events = activity_quarters.events + 1`, e.UserID, quarterOf(e.At))
		return err
	})
}

// quarterOf is the quarter of an hour t falls in, as Unix seconds / 900.
func quarterOf(t time.Time) int64 { return t.Unix() / 900 }

var _ dashboard.Store = (*ActivityStore)(nil)

// FindEvents returns a page of a user's events, newest first, and the total.
func (s *ActivityStore) FindEvents(ctx context.Context, userID int64, kind activity.Kind, offset, limit int) ([]*activity.Event, int, error) {
	where, args := `WHERE user_id = $1`, []any{userID}
	if kind != "" {
		where, args = where+` AND kind = $2`, append(args, kind)
	}
	var total int
	if err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM activity `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	events, err := queryAll(ctx, s.q(ctx), scanEvent, `SELECT `+activityColumns+` FROM activity `+where+
		fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT $%d OFFSET $%d`, n+1, n+2), append(args, limit, offset)...)
	return events, total, err
}

// EventBuckets counts a user's events per quarter of an hour since a time,
// oldest first, from the rollup written with each event.
func (s *ActivityStore) EventBuckets(ctx context.Context, userID int64, since time.Time) ([]dashboard.Bucket, error) {
	return queryAll(ctx, s.q(ctx), func(row scanner) (dashboard.Bucket, error) {
		var (
			q int64
			b dashboard.Bucket
		)
		err := row.Scan(&q, &b.Events)
		b.Start = time.Unix(q*900, 0).UTC()
		return b, err
	}, `SELECT quarter, events FROM activity_quarters WHERE user_id = $1 AND quarter >= $2 ORDER BY quarter`, userID, quarterOf(since))
}

// LastActive returns when a user last did anything; nil if never.
func (s *ActivityStore) LastActive(ctx context.Context, userID int64) (*time.Time, error) {
	var at time.Time
	err := s.q(ctx).QueryRowContext(ctx, `SELECT at FROM activity WHERE user_id = $1 ORDER BY at DESC LIMIT 1`, userID).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	at = at.UTC()
	return &at, err
}

// FinishedAttempts returns a user's submitted and expired exam and lab
// attempts, oldest first.
func (s *ActivityStore) FinishedAttempts(ctx context.Context, userID int64) ([]dashboard.AttemptSummary, error) {
	return queryAll(ctx, s.q(ctx), func(row scanner) (dashboard.AttemptSummary, error) {
		var a dashboard.AttemptSummary
		err := row.Scan(&a.Kind, &a.SubjectID, &a.Title, &a.StartedAt, &a.FinishedAt, &a.Status, &a.Score, &a.Passed, &a.TimeLimitMinutes)
		a.StartedAt, a.FinishedAt = a.StartedAt.UTC(), a.FinishedAt.UTC()
		return a, err
	}, `SELECT 'exam', e.id, e.title, a.started_at, a.finished_at, a.status, a.score, a.passed, e.time_limit_minutes
		FROM exam_attempts a JOIN exams e ON e.id = a.exam_id
		WHERE a.user_id = $1 AND a.status IN ('submitted', 'expired') AND a.finished_at IS NOT NULL
		UNION ALL
		SELECT 'lab', l.id, l.title, a.started_at, a.finished_at, a.status, a.score, a.passed, l.time_limit_minutes
		FROM lab_attempts a JOIN labs l ON l.id = a.lab_id
		WHERE a.user_id = $1 AND a.status IN ('submitted', 'expired') AND a.finished_at IS NOT NULL
		ORDER BY 5`, userID)
}

// CountRunningSandboxes counts a user's running sandboxes.
func (s *ActivityStore) CountRunningSandboxes(ctx context.Context, userID int64) (int, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM containers WHERE user_id = $1 AND status = 'running'`, userID).Scan(&n)
	return n, err
}

var _ dashboard.SystemStore = (*ActivityStore)(nil)

// SystemRows reads the admins' system view; themes bounds the lists of most
// and least completed themes.
func (s *ActivityStore) SystemRows(ctx context.Context, now time.Time, themes int) (*dashboard.SystemRows, error) {
	q := s.q(ctx)
	r := &dashboard.SystemRows{SandboxesByStatus: map[string]int{"creating": 0, "running": 0, "stopped": 0, "error": 0}}
	// +user_id keeps SQLite on the index by time (the window is small) rather
	// than walking every user's rows through (user_id, at).
	if err := q.QueryRowContext(ctx, `SELECT (SELECT count(DISTINCT +user_id) FROM activity WHERE at >= $1),
		(SELECT count(DISTINCT +user_id) FROM activity WHERE at >= $2)`, now.AddDate(0, 0, -7), now.AddDate(0, 0, -30)).
		Scan(&r.ActiveUsers7d, &r.ActiveUsers30d); err != nil {
		return nil, err
	}
	type statusCount struct {
		status string
		n      int
	}
	counts, err := queryAll(ctx, q, func(row scanner) (statusCount, error) {
		var c statusCount
		return c, row.Scan(&c.status, &c.n)
	}, `SELECT status, count(*) FROM containers GROUP BY status`)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		r.SandboxesByStatus[c.status] = c.n
	}
	subjects := func(table, attempts, key string) ([]dashboard.SubjectStats, error) {
		return queryAll(ctx, q, func(row scanner) (dashboard.SubjectStats, error) {
			var st dashboard.SubjectStats
			return st, row.Scan(&st.ID, &st.Title, &st.Attempts, &st.Finished, &st.Passed)
		}, `SELECT t.id, t.title, count(a.id),
			coalesce(sum(CASE WHEN a.status IN ('submitted', 'expired') THEN 1 ELSE 0 END), 0),
			coalesce(sum(CASE WHEN a.passed THEN 1 ELSE 0 END), 0)
			FROM `+table+` t LEFT JOIN `+attempts+` a ON a.`+key+` = t.id GROUP BY t.id, t.title ORDER BY t.id`)
	}
	if r.Exams, err = subjects("exams", "exam_attempts", "exam_id"); err != nil {
		return nil, err
	}
	if r.Labs, err = subjects("labs", "lab_attempts", "lab_id"); err != nil {
		return nil, err
	}
	ranked := func(order string) ([]dashboard.ThemeCount, error) {
		return queryAll(ctx, q, func(row scanner) (dashboard.ThemeCount, error) {
			var c dashboard.ThemeCount
			return c, row.Scan(&c.ThemeID, &c.Title, &c.Completions)
		}, `SELECT t.id, t.title, count(c.theme_id) FROM themes t LEFT JOIN theme_completions c ON c.theme_id = t.id
			GROUP BY t.id, t.title ORDER BY 3 `+order+`, t.id LIMIT $1`, themes)
	}
	if r.MostCompleted, err = ranked("DESC"); err != nil {
		return nil, err
	}
	r.LeastCompleted, err = ranked("ASC")
	return r, err
}
