package store

import (
	"context"
	"database/sql"
	"time"

	"tuxlab/internal/exam"
)

// FindUserAttempts returns every exam attempt of the user, oldest first.
func (s *ExamStore) FindUserAttempts(ctx context.Context, userID int64) ([]*exam.Attempt, error) {
	return queryAll(ctx, s.q(ctx), scanExamAttempt, `SELECT `+examAttemptColumns+` FROM exam_attempts WHERE user_id = $1 ORDER BY id`, userID)
}

// SaveDraft stores answers as the draft of attempt id at now, once allow
// accepts the attempt as it is, its row locked meanwhile.
func (s *ExamStore) SaveDraft(ctx context.Context, id int64, answers []exam.Answer, now time.Time, allow func(*exam.Attempt) error) (*exam.Attempt, error) {
	var out *exam.Attempt
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		a, err := scanExamAttempt(tx.QueryRowContext(ctx, `SELECT `+examAttemptColumns+` FROM exam_attempts WHERE id = $1`+s.dialect.ForUpdate, id))
		if err != nil {
			return err
		}
		if err := allow(a); err != nil {
			return err
		}
		now = now.UTC()
		if _, err := tx.ExecContext(ctx, `UPDATE exam_attempts SET draft = $1, draft_saved_at = $2 WHERE id = $3`,
			resultsJSON(answers), now, id); err != nil {
			return err
		}
		a.Draft, a.DraftSavedAt = answers, &now
		out = a
		return nil
	})
	return out, err
}
