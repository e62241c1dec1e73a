-- Mail waiting to be sent, and sent: the queue of internal/mail. A row, not a
-- goroutine, so a mail survives a restart and a mail server that is down.
-- A worker claims a due row by moving next_attempt_at past a lease (a
-- compare-and-set: one replica wins), sends it, then stamps sent_at, or
-- records the error and the next try. attempts counts the claims; a row
-- that reaches the bound, or that the server refuses for good (5xx), is given
-- up (failed_at). The body is erased once sent or given up: a reset
-- mail holds a live link. See docs/accounts.md.
CREATE TABLE mail_outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP,
    failed_at       TIMESTAMP, -- given up: never tried again
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      TIMESTAMP NOT NULL
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- One-time password reset tokens: only the SHA-256 of the token (hex) is
-- kept; the token itself is only in the mail. A token is valid until
-- expires_at and used once (used_at).
CREATE TABLE password_resets (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX password_resets_token_key ON password_resets (token_hash);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);
