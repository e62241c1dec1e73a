package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"tuxlab/internal/recording"
)

// RecordingStore keeps terminal recordings (table terminal_recordings).
type RecordingStore struct{ *DB }

// Recordings returns the recording store over the shared pool.
func (s *DB) Recordings() *RecordingStore { return &RecordingStore{s} }

var _ recording.Store = (*RecordingStore)(nil)

const recordingColumns = `id, user_id, container_id, container_name, attempt_kind, attempt_id, width, height,
	started_at, ended_at, bytes, truncated`

func scanRecording(row scanner) (*recording.Recording, error) {
	var r recording.Recording
	var kind sql.NullString
	var attempt sql.NullInt64
	var ended sql.NullTime
	err := row.Scan(&r.ID, &r.UserID, &r.ContainerID, &r.ContainerName, &kind, &attempt, &r.Width, &r.Height,
		&r.StartedAt, &ended, &r.Bytes, &r.Truncated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, recording.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r.AttemptKind = kind.String
	if attempt.Valid {
		r.AttemptID = &attempt.Int64
	}
	r.StartedAt = r.StartedAt.UTC()
	if ended.Valid {
		t := ended.Time.UTC()
		r.EndedAt = &t
	}
	return &r, nil
}

// CreateRecording inserts r without events and sets its ID.
func (s *RecordingStore) CreateRecording(ctx context.Context, r *recording.Recording) error {
	var kind *string
	if r.AttemptKind != "" {
		kind = &r.AttemptKind
	}
	return s.q(ctx).QueryRowContext(ctx, `INSERT INTO terminal_recordings (user_id, container_id, container_name, attempt_kind, attempt_id,
		width, height, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
		r.UserID, r.ContainerID, r.ContainerName, kind, r.AttemptID, r.Width, r.Height, r.StartedAt.UTC()).Scan(&r.ID)
}

// AppendRecording adds events to recording id in one statement (the stored
// text is extended, never rewritten) and sets its size, its truncated flag
// and, when ended is given, its end.
func (s *RecordingStore) AppendRecording(ctx context.Context, id int64, events []byte, size int64, truncated bool, ended *time.Time) error {
	var end any
	if ended != nil {
		end = ended.UTC()
	}
	_, err := s.q(ctx).ExecContext(ctx, `UPDATE terminal_recordings SET events = events || $2, bytes = $3, truncated = $4,
		ended_at = COALESCE($5, ended_at) WHERE id = $1`, id, string(events), size, truncated, end)
	return err
}

// FindRecording returns recording id, or recording.ErrNotFound.
func (s *RecordingStore) FindRecording(ctx context.Context, id int64) (*recording.Recording, error) {
	return scanRecording(s.q(ctx).QueryRowContext(ctx, `SELECT `+recordingColumns+` FROM terminal_recordings WHERE id = $1`, id))
}

// RecordingEvents returns the event lines of recording id.
func (s *RecordingStore) RecordingEvents(ctx context.Context, id int64) ([]byte, error) {
	var events string
	err := s.q(ctx).QueryRowContext(ctx, `SELECT events FROM terminal_recordings WHERE id = $1`, id).Scan(&events)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, recording.ErrNotFound
	}
	return []byte(events), err
}

// FindRecordings lists the recordings f selects, newest first.
func (s *RecordingStore) FindRecordings(ctx context.Context, f recording.Filter) ([]*recording.Recording, error) {
	q := `SELECT ` + recordingColumns + ` FROM terminal_recordings WHERE TRUE`
	var args []any
	if f.UserID != nil {
		args = append(args, *f.UserID)
		q += fmt.Sprintf(` AND user_id = $%d`, len(args))
	}
	if f.ContainerID != nil {
		args = append(args, *f.ContainerID)
		q += fmt.Sprintf(` AND container_id = $%d`, len(args))
	}
	return queryAll(ctx, s.q(ctx), scanRecording, q+` ORDER BY started_at DESC, id DESC`, args...)
}

// DeleteRecording deletes recording id.
func (s *RecordingStore) DeleteRecording(ctx context.Context, id int64) error {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM terminal_recordings WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return recording.ErrNotFound
	}
	return err
}

// DeleteRecordingsBefore deletes the recordings started before t.
func (s *RecordingStore) DeleteRecordingsBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.q(ctx).ExecContext(ctx, `DELETE FROM terminal_recordings WHERE started_at < $1`, t.UTC())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Teaches reports whether instructorID owns a class learnerID is in.
func (s *RecordingStore) Teaches(ctx context.Context, instructorID, learnerID int64) (bool, error) {
	var n int
	err := s.q(ctx).QueryRowContext(ctx, `SELECT count(*) FROM classes c JOIN class_members m ON m.class_id = c.id
		WHERE c.owner_id = $1 AND m.user_id = $2`, instructorID, learnerID).Scan(&n)
	return n > 0, err
}

// OpenAttempt finds userID's lab or exam attempt in progress whose sandbox
// is containerID.
func (s *RecordingStore) OpenAttempt(ctx context.Context, userID, containerID int64) (string, int64, bool, error) {
	var kind string
	var id int64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT 'lab', id FROM lab_attempts WHERE user_id = $1 AND container_id = $2 AND status = 'in_progress'
		UNION ALL SELECT 'exam', id FROM exam_attempts WHERE user_id = $1 AND container_id = $2 AND status = 'in_progress'
		LIMIT 1`, userID, containerID).Scan(&kind, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	return kind, id, err == nil, err
}

// SandboxOwner returns the owner of sandbox containerID, if it exists.
func (s *RecordingStore) SandboxOwner(ctx context.Context, containerID int64) (int64, bool, error) {
	var id int64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT user_id FROM containers WHERE id = $1`, containerID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// AttemptRecording returns the id of the latest recording of an attempt.
func (s *RecordingStore) AttemptRecording(ctx context.Context, kind string, attemptID int64) (*int64, error) {
	var id int64
	err := s.q(ctx).QueryRowContext(ctx, `SELECT id FROM terminal_recordings WHERE attempt_kind = $1 AND attempt_id = $2
		ORDER BY started_at DESC, id DESC LIMIT 1`, kind, attemptID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}
