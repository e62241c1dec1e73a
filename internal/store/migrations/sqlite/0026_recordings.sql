-- Terminal recordings (docs/terminal.md, "Recordings"): a session's output
-- as asciicast v2 event lines, kept in the database so every replica serves
-- them. Not tied to the sandbox (a lab removes its attempt's sandbox once
-- graded, and its results still link the recording); deleting the user
-- deletes their recordings.
CREATE TABLE terminal_recordings (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id        INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    container_id   INTEGER NOT NULL,
    container_name TEXT NOT NULL,
    attempt_kind   TEXT,
    attempt_id     INTEGER,
    width          INTEGER NOT NULL,
    height         INTEGER NOT NULL,
    started_at     TIMESTAMP NOT NULL,
    ended_at       TIMESTAMP,
    bytes          INTEGER NOT NULL DEFAULT 0,
    truncated      BOOLEAN NOT NULL DEFAULT FALSE,
    events         TEXT NOT NULL DEFAULT '',
    CHECK (attempt_kind IS NULL OR attempt_kind IN ('lab', 'exam'))
);
CREATE INDEX terminal_recordings_container_idx ON terminal_recordings (container_id);
CREATE INDEX terminal_recordings_user_idx ON terminal_recordings (user_id, started_at);
CREATE INDEX terminal_recordings_attempt_idx ON terminal_recordings (attempt_kind, attempt_id);
CREATE INDEX terminal_recordings_started_idx ON terminal_recordings (started_at);
