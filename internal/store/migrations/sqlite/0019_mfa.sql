-- Two-factor sign-in (TOTP, RFC 6238); docs/mfa.md says how it works.
-- When the user turned it on; NULL while it is off. On the users row, so the
-- per-request identity check (and its cache) knows it without another read.
ALTER TABLE users ADD COLUMN mfa_enabled_at TIMESTAMP;
-- A user's TOTP secrets, sealed (AES-GCM under a key derived from SECRET_KEY,
-- bound to the user id): secret is the one in force, pending_secret the one
-- set up and not yet confirmed by a code. last_step is the 30-second time
-- step of the last code accepted: a code of that step or an earlier one is
-- refused, so each code signs in once.
CREATE TABLE user_mfa (
    user_id        INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret         BLOB,
    pending_secret BLOB,
    pending_at     TIMESTAMP,
    last_step      BIGINT NOT NULL DEFAULT 0
);
-- One-time recovery codes: only a SHA-256 hash of each, used_at once spent.
CREATE TABLE mfa_recovery_codes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP
);
CREATE UNIQUE INDEX mfa_recovery_codes_key ON mfa_recovery_codes (user_id, code_hash);
-- The install's rule: admins and instructors must turn two-factor sign-in on.
INSERT INTO settings (key, value) VALUES ('mfa_required_staff', 'false') ON CONFLICT (key) DO NOTHING;
