-- Install-wide values, such as the id that labels this install's engine objects.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sandbox_templates (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    name              TEXT NOT NULL UNIQUE,
    description       TEXT NOT NULL DEFAULT '',
    image             TEXT NOT NULL,
    memory_mb         INTEGER NOT NULL,
    cpu_millis        INTEGER NOT NULL,
    pids_limit        INTEGER NOT NULL,
    disk_mb           INTEGER NOT NULL DEFAULT 0,
    network           BOOLEAN NOT NULL DEFAULT 0,
    runtime           TEXT NOT NULL DEFAULT '',
    run_as            TEXT NOT NULL,
    shell             TEXT NOT NULL, -- JSON array of strings
    cap_add           TEXT NOT NULL, -- JSON array of strings
    no_new_privileges BOOLEAN NOT NULL DEFAULT 1,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL
);
CREATE TABLE containers (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id          INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    template_id      INTEGER NOT NULL REFERENCES sandbox_templates (id),
    name             TEXT NOT NULL,
    engine_id        TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('creating', 'running', 'stopped', 'error')),
    status_detail    TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL,
    started_at       TIMESTAMP,
    stopped_at       TIMESTAMP,
    expires_at       TIMESTAMP NOT NULL,
    last_activity_at TIMESTAMP NOT NULL
);
CREATE INDEX containers_user_idx ON containers (user_id);
CREATE INDEX containers_status_idx ON containers (status);
