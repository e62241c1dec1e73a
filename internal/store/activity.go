package store

import (
	"context"
	"database/sql"

	"tuxlab/internal/activity"
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
	return s.q(ctx).QueryRowContext(ctx, `INSERT INTO activity (user_id, kind, at, subject_id, title, score, passed, module_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		e.UserID, e.Kind, e.At.UTC(), e.SubjectID, e.Title, score, passed, intArg(e.ModuleID)).Scan(&e.ID)
}
