// Package mail sends tuxlab's e-mail through a queue kept in the database:
// Enqueue writes a row (in the caller's transaction, if any) and returns at
// once; a worker (Run) claims due rows, sends them over SMTP and retries
// failures with a growing backoff, a bounded number of times. A mail server
// that is slow or down therefore never slows or fails a request, and a
// restart loses nothing: the rows wait for the next worker.
package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/textproto"
	"strings"
	"time"
)

// Message is one mail to one recipient, in plain text.
type Message struct {
	To      string // an address as auth.NormalizeEmail returns it
	Subject string
	Body    string
}

// Row is a queued message as a worker claimed it: Attempts counts this claim.
type Row struct {
	ID       int64
	Message  Message
	Attempts int
}

// Store keeps the queue's rows. Its writes join the transaction ctx carries
// (store.InTx), so a mail is queued only if the change that sends it commits.
type Store interface {
	// EnqueueMail adds m, due at now.
	EnqueueMail(ctx context.Context, m Message, now time.Time) error
	// ClaimMail claims up to limit rows that are due at now, unsent and
	// tried fewer than maxAttempts times: each claimed row's attempts grow
	// by one and it is not due again until until (a lease), so no other
	// worker sends it meanwhile. A row another worker claimed first is
	// skipped.
	ClaimMail(ctx context.Context, now, until time.Time, maxAttempts, limit int) ([]Row, error)
	// MailSent records that row id was sent at now and erases its body.
	MailSent(ctx context.Context, id int64, now time.Time) error
	// MailFailed records why row id failed and when it is due again; with
	// giveUp it is never tried again and its body is erased.
	MailFailed(ctx context.Context, id int64, why string, next time.Time, giveUp bool) error
	// AfterCommit runs fn once the transaction ctx carries has committed
	// (at once without one).
	AfterCommit(ctx context.Context, fn func())
}

// Sender delivers one message: from and to are bare addresses (the
// envelope), data the whole message with its headers.
type Sender interface {
	Send(ctx context.Context, from, to string, data []byte) error
}

// Options tune a Queue. Zero values take the defaults given.
type Options struct {
	// Sender delivers the mail; nil turns mail off (Enabled reports false,
	// and Enqueue refuses).
	Sender Sender
	// From is the From header and envelope sender (TUXLAB_MAIL_FROM), such
	// as "tuxlab <noreply@example.org>".
	From string
	// Poll is how often the worker looks for due rows it was not woken for
	// (rows of other processes, retries): 5s.
	Poll time.Duration
	// RetryBase is the wait after a first failure, doubled after each
	// further one up to RetryMax: 30s and 30m.
	RetryBase, RetryMax time.Duration
	// MaxAttempts bounds the tries of one row: 8 (with the default
	// backoff, the last is about an hour after the first).
	MaxAttempts int
	// SendTimeout bounds one delivery, connection included: 30s. A claim
	// lasts twice as long, so a worker that dies mid-send leaves a row
	// another worker takes again after it.
	SendTimeout time.Duration
	Log         *slog.Logger
	Now         func() time.Time
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Poll, 5*time.Second)
	def(&o.RetryBase, 30*time.Second)
	def(&o.RetryMax, 30*time.Minute)
	def(&o.SendTimeout, 30*time.Second)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Queue is the mail queue and its worker.
type Queue struct {
	store Store
	opt   Options
	wake  chan struct{}
}

// ErrOff is Enqueue's error when no mail server is configured.
var ErrOff = errors.New("mail is off: no mail server configured (TUXLAB_SMTP_URL)")

// batch is how many rows a worker claims at once.
const batch = 20

// New returns a queue over store; see Options.
func New(store Store, o Options) *Queue {
	o.defaults()
	return &Queue{store: store, opt: o, wake: make(chan struct{}, 1)}
}

// Enabled reports whether mail is sent at all (a mail server is configured).
func (q *Queue) Enabled() bool { return q.opt.Sender != nil }

// Enqueue queues m. It joins the transaction ctx carries, and wakes this
// process's worker once that has committed.
func (q *Queue) Enqueue(ctx context.Context, m Message) error {
	if !q.Enabled() {
		return ErrOff
	}
	if strings.ContainsAny(m.To, "\r\n<>,") || strings.ContainsAny(m.Subject, "\r\n") || m.To == "" {
		return fmt.Errorf("mail: refusing a recipient or subject with line breaks or separators: %q", m.To)
	}
	if err := q.store.EnqueueMail(ctx, m, q.opt.Now().UTC()); err != nil {
		return fmt.Errorf("queue mail: %w", err)
	}
	q.store.AfterCommit(ctx, func() {
		select {
		case q.wake <- struct{}{}:
		default: // already woken
		}
	})
	return nil
}

// Run sends queued mail until ctx ends: at once when this process queues
// a mail, and every Poll for the rest (other processes' rows, retries).
// It returns when ctx ends and its last delivery has been recorded.
func (q *Queue) Run(ctx context.Context) {
	if !q.Enabled() {
		return
	}
	tick := time.NewTicker(q.opt.Poll)
	defer tick.Stop()
	for {
		if err := q.drain(ctx); err != nil && ctx.Err() == nil {
			q.opt.Log.Warn("mail queue", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-q.wake:
		}
	}
}

// drain sends every row due now, batch by batch.
func (q *Queue) drain(ctx context.Context) error {
	for ctx.Err() == nil {
		now := q.opt.Now().UTC()
		rows, err := q.store.ClaimMail(ctx, now, now.Add(2*q.opt.SendTimeout), q.opt.MaxAttempts, batch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			q.deliver(ctx, r)
		}
		if len(rows) < batch {
			return nil
		}
	}
	return nil
}

// deliver sends one claimed row and records how it went. The record is
// written even when ctx has ended meanwhile, so a shutdown in the middle of
// a delivery leaves the row due again at once, not after its lease.
func (q *Queue) deliver(ctx context.Context, r Row) {
	sctx, cancel := context.WithTimeout(ctx, q.opt.SendTimeout)
	err := q.send(sctx, r.Message)
	cancel()
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer wcancel()
	now := q.opt.Now().UTC()
	if err == nil {
		if err := q.store.MailSent(wctx, r.ID, now); err != nil {
			q.opt.Log.Error("mail sent but not recorded: it may be sent again", "id", r.ID, "error", err.Error())
			return
		}
		q.opt.Log.Info("mail sent", "id", r.ID, "attempt", r.Attempts)
		return
	}
	giveUp := r.Attempts >= q.opt.MaxAttempts || permanent(err)
	next := now.Add(q.backoff(r.Attempts))
	if giveUp || ctx.Err() != nil {
		next = now // given up now, or cut short by the shutdown: due again at once
	}
	if rerr := q.store.MailFailed(wctx, r.ID, truncate(err.Error(), 500), next, giveUp); rerr != nil {
		q.opt.Log.Error("mail failure not recorded", "id", r.ID, "error", rerr.Error())
	}
	if giveUp {
		q.opt.Log.Warn("mail given up", "id", r.ID, "attempts", r.Attempts, "error", err.Error())
		return
	}
	q.opt.Log.Warn("mail not sent: will retry", "id", r.ID, "attempt", r.Attempts, "next", next, "error", err.Error())
}

// backoff is the wait after the attempts-th failure.
func (q *Queue) backoff(attempts int) time.Duration {
	d := q.opt.RetryBase
	for i := 1; i < attempts && d < q.opt.RetryMax; i++ {
		d *= 2
	}
	return min(d, q.opt.RetryMax)
}

// permanent reports whether the server refused the mail for good (an SMTP
// 5xx reply, such as an unknown mailbox): trying again would not help.
func permanent(err error) bool {
	var te *textproto.Error
	return errors.As(err, &te) && te.Code >= 500 && te.Code < 600
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
