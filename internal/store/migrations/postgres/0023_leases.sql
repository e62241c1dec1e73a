-- Leases on work that runs once per install however many replicas serve it
-- (docs/operations.md, "Several replicas"): one row per piece of work, held
-- by one process (holder) until expires_at; the holder renews it before then,
-- another process takes it only once it has expired, and a clean stop
-- deletes it so the next holder need not wait.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
