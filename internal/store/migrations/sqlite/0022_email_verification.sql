-- E-mail verification on registration (TUXLAB_REQUIRE_EMAIL_VERIFICATION,
-- docs/accounts.md). When the account's address was confirmed; NULL while it
-- is not. Accounts that exist already count as verified since they were made.
ALTER TABLE users ADD COLUMN email_verified_at TIMESTAMP;
UPDATE users SET email_verified_at = created_at;

-- One-time verification tokens, kept as password reset keeps its own: only
-- the SHA-256 of the token (hex), valid until expires_at, used once (used_at).
-- A table of their own, so a verification link can never reset a password.
CREATE TABLE email_verifications (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX email_verifications_token_key ON email_verifications (token_hash);
CREATE INDEX email_verifications_user_idx ON email_verifications (user_id);
