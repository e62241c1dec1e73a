package store

import (
	"context"
	"database/sql"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// usersChannel is the PostgreSQL notification channel on which every change
// to a user's row is announced, the user id as payload, by a trigger on the
// users table (migration 0015): whatever writes the row, the change is
// announced when it commits, and not at all if it rolls back.
const usersChannel = "tuxlab_users"

// inUserTx runs fn, which changes user id's row, in a transaction (or the
// one ctx carries), and drops the user from this process's cache once the change has
// committed: before inUserTx returns, or after the commit of the InTx it
// joins. Dropped before the commit, the row could be cached again, as it
// was, by a concurrent read. If that outer commit fails, nothing is dropped:
// the row ages out within UserCacheTTL.
func (s *DB) inUserTx(ctx context.Context, id int64, fn func(tx *sql.Tx) error) error {
	err := s.inTx(ctx, fn)
	s.AfterCommit(ctx, func() { s.users.drop(id) })
	return err
}

// ListenUsers turns on the user cache of a PostgreSQL store: it keeps a
// connection of its own listening for changes announced by any process on
// the database and drops each changed user, until Close. While it is not
// listening (its first connection failed, a connection broke) the cache is
// off and every request reads the user's row; once it listens again the
// cache starts empty, so no change made meanwhile goes unseen. It returns
// once the first attempt to listen has succeeded or failed; a failure is
// logged and retried in the background. On SQLite it does nothing: the
// cache is on from Open.
func (s *DB) ListenUsers(ctx context.Context, dsn string, log *slog.Logger) {
	if s.dialect.Engine != Postgres {
		return
	}
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	s.stopListening = func() {
		cancel()
		<-done
	}
	conn, err := s.listen(bg, dsn)
	go func() {
		defer close(done)
		s.listenUsers(bg, conn, err, dsn, log)
	}()
}

// listenUsers drops the users announced on conn until it fails, then
// listens again with a growing pause between attempts (up to 5 s), until
// ctx ends. conn is nil when err tells why the first attempt failed.
func (s *DB) listenUsers(ctx context.Context, conn *pgx.Conn, err error, dsn string, log *slog.Logger) {
	pause := 100 * time.Millisecond
	for {
		if conn != nil {
			err = s.dropAnnounced(ctx, conn)
			closeConn(conn)
			pause = 100 * time.Millisecond
		}
		s.users.setEnabled(false)
		if ctx.Err() != nil {
			return
		}
		log.Warn("user cache off: not listening for user changes; every request reads the user's row until it listens again",
			"error", err.Error(), "retry_in", pause.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
		conn, err = s.listen(ctx, dsn)
	}
}

// listen opens a connection of its own, listens on usersChannel and turns
// the cache on: every change that commits from now on is announced to this
// connection, and setEnabled drops the rows cached before.
func (s *DB) listen(ctx context.Context, dsn string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+usersChannel); err != nil {
		closeConn(conn)
		return nil, err
	}
	s.users.setEnabled(true)
	return conn, nil
}

// dropAnnounced drops each user announced on conn until conn fails or ctx ends.
func (s *DB) dropAnnounced(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(n.Payload, 10, 64)
		if err != nil {
			s.users.setEnabled(true) // not an id: forget every user
			continue
		}
		s.users.drop(id)
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn.Close(ctx)
}
