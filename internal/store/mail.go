package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"tuxlab/internal/mail"
)

// MailStore keeps the mail queue (mail_outbox). Its writes join the
// transaction ctx carries from InTx.
type MailStore struct{ *DB }

// Mail returns the mail queue's store over the shared pool.
func (s *DB) Mail() *MailStore { return &MailStore{s} }

var _ mail.Store = (*MailStore)(nil)

// EnqueueMail adds m, due at now.
func (s *MailStore) EnqueueMail(ctx context.Context, m mail.Message, now time.Time) error {
	now = now.UTC().Truncate(time.Microsecond)
	_, err := s.q(ctx).ExecContext(ctx, `INSERT INTO mail_outbox (recipient, subject, body, attempts, next_attempt_at, created_at)
		VALUES ($1, $2, $3, 0, $4, $4)`, m.To, m.Subject, m.Body, now)
	return translate(err)
}

// ClaimMail claims up to limit due rows, oldest due first. Each claim is a
// compare-and-set on the row's next_attempt_at: of two workers that picked
// the same row, one updates it and the other finds it no longer due.
func (s *MailStore) ClaimMail(ctx context.Context, now, until time.Time, maxAttempts, limit int) ([]mail.Row, error) {
	now, until = now.UTC().Truncate(time.Microsecond), until.UTC().Truncate(time.Microsecond)
	ids, err := queryAll(ctx, s.q(ctx), func(r scanner) (int64, error) {
		var id int64
		return id, r.Scan(&id)
	}, `SELECT id FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL AND attempts < $1 AND next_attempt_at <= $2
		ORDER BY next_attempt_at, id LIMIT $3`, maxAttempts, now, limit)
	if err != nil {
		return nil, err
	}
	out := []mail.Row{}
	for _, id := range ids {
		var r mail.Row
		err := s.q(ctx).QueryRowContext(ctx, `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = $1
			WHERE id = $2 AND sent_at IS NULL AND failed_at IS NULL AND attempts < $3 AND next_attempt_at <= $4
			RETURNING id, recipient, subject, body, attempts`, until, id, maxAttempts, now).
			Scan(&r.ID, &r.Message.To, &r.Message.Subject, &r.Message.Body, &r.Attempts)
		if err == nil {
			out = append(out, r)
			continue
		}
		if errors.Is(err, sql.ErrNoRows) {
			continue // another worker claimed it first
		}
		return out, translate(err)
	}
	return out, nil
}

// MailSent records that row id was sent and erases its body.
func (s *MailStore) MailSent(ctx context.Context, id int64, now time.Time) error {
	_, err := s.q(ctx).ExecContext(ctx, `UPDATE mail_outbox SET sent_at = $1, body = '', last_error = '' WHERE id = $2`,
		now.UTC().Truncate(time.Microsecond), id)
	return translate(err)
}

// MailFailed records a failed delivery of row id: due again at next, or,
// with giveUp, never again (failed_at is next, the body erased).
func (s *MailStore) MailFailed(ctx context.Context, id int64, why string, next time.Time, giveUp bool) error {
	next = next.UTC().Truncate(time.Microsecond)
	q := `UPDATE mail_outbox SET last_error = $1, next_attempt_at = $2 WHERE id = $3`
	if giveUp {
		q = `UPDATE mail_outbox SET last_error = $1, failed_at = $2, body = '' WHERE id = $3`
	}
	_, err := s.q(ctx).ExecContext(ctx, q, why, next, id)
	return translate(err)
}

// CountMail counts the rows waiting to be sent (due or not) and those given up.
func (s *MailStore) CountMail(ctx context.Context) (waiting, failed int, err error) {
	err = s.q(ctx).QueryRowContext(ctx, `SELECT
		COALESCE(SUM(CASE WHEN sent_at IS NULL AND failed_at IS NULL THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN failed_at IS NOT NULL THEN 1 ELSE 0 END), 0) FROM mail_outbox`).Scan(&waiting, &failed)
	return waiting, failed, err
}
