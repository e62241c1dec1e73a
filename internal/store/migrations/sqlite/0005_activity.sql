-- What learners do, one row per thing done, written in the same transaction as it.
CREATE TABLE activity (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    at         TIMESTAMP NOT NULL,
    subject_id INTEGER NOT NULL DEFAULT 0,
    title      TEXT NOT NULL DEFAULT '',
    score      INTEGER,
    passed     BOOLEAN,
    module_id  INTEGER
);
-- The dashboard reads one user's rows by time: newest first, or a window of days.
CREATE INDEX activity_user_at_idx ON activity (user_id, at);
CREATE INDEX activity_at_idx ON activity (at);
